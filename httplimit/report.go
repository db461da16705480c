package httplimit

import (
	"net/http"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/nethttp"
)

// Outcome is what one rule decided for one request (decision.Outcome).
type Outcome = decision.Outcome

// The outcomes of a rule, as decision names them.
const (
	Allowed       = decision.Allowed
	Limited       = decision.Limited
	ShadowLimited = decision.ShadowLimited
	Exempt        = decision.Exempt
	Failed        = decision.Failed
	NotSpent      = decision.NotSpent
	Delayed       = decision.Delayed
)

// UnknownClient is Report.Client for a caller rejected for its key.
const UnknownClient = decision.UnknownClient

// StatusClientGone is Report.Status for a request whose caller went away
// while it waited for a slot or its turn: nothing was answered (nginx's 499).
const StatusClientGone = decision.StatusClientGone

// Report is what happened to one request (decision.Report).
type Report = decision.Report

// RuleResult is one rule's decision (decision.RuleResult).
type RuleResult = decision.RuleResult

// CostError is why a rule's cost_header could not be read from a response:
// the reservation then stands as it was decided (Options.OnSettle).
type CostError = decision.CostError

// WriteProblem writes an application/problem+json answer with Cache-Control:
// no-store. Headers already set on w (Retry-After, RateLimit) are kept.
func WriteProblem(w http.ResponseWriter, status int, detail string) {
	nethttp.WriteProblem(w, status, nethttp.Problem(status, detail))
}

// FormatPeriod writes a period the way people say it: 1m, 30s, 1h, 1d;
// other periods as time.Duration does (1.5s, 100ms).
func FormatPeriod(d time.Duration) string { return decision.FormatPeriod(d) }
