package httplimit

import (
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/throttle"
)

// Outcome is what one rule decided for one request.
type Outcome uint8

const (
	// Allowed: within the limit.
	Allowed Outcome = iota
	// Limited: over the limit of an enforcing rule; the request is rejected.
	Limited
	// ShadowLimited: over the limit of a shadow rule; counted, not rejected.
	ShadowLimited
	// Exempt: the rule's allow list covers the caller; nothing counted.
	Exempt
	// Failed: the store could not decide.
	Failed
	// NotSpent: the rule had room, but another rule rejected the request,
	// so nothing was counted against this one.
	NotSpent
	// Delayed: allowed after waiting its turn (a rule with a delay): the
	// request was held for the decision's Delay, then passed on.
	Delayed
)

var outcomeNames = [...]string{"allowed", "limited", "shadow_limited", "exempt", "store_error", "not_spent", "delayed"}

// String returns the metric label of o: allowed, limited, shadow_limited,
// exempt, store_error, not_spent or delayed.
func (o Outcome) String() string { return outcomeNames[o] }

// UnknownClient is Report.Client for a caller rejected for its key.
const UnknownClient = "unknown"

// Report is what happened to one request.
type Report struct {
	// Client is a label-safe name of the caller: its client id,
	// "anonymous", "unknown" (rejected for its key) or "-" (the policy
	// identifies nobody by key). Never the access key.
	Client string
	// Status is the status sluice answered with itself (401, 429, 503), or
	// 0 if the request was passed on; StatusClientGone when its caller went
	// away while it waited for a throttle slot (nothing was answered).
	Status int
	// Counted names, for a 429, what the rule whose wait is RetryAfter
	// counted: the client id, the address, `header X-Tenant "acme"`... as
	// the problem detail does; never an access key. Empty otherwise.
	Counted string
	// RetryAfter is the Retry-After of a 429 or 503.
	RetryAfter time.Duration
	// Rules has one result per matching rule.
	Rules []RuleResult
	// Latency is the time spent deciding.
	Latency time.Duration
	// Err is the store's error, if it failed.
	Err error
	// Throttled is true when Options.Throttle decided the request (it
	// passed the rules); Priority is then its priority, Refusal why the
	// throttle refused it (throttle.ReasonNone: admitted) and QueueWait
	// how long it waited in the throttle's queue.
	Throttled bool
	Priority  throttle.Priority
	Refusal   throttle.Reason
	QueueWait time.Duration
	// Held is how long the request was held for its turn by rules with a
	// delay (the longest of their Delays, less the time deciding took),
	// 0 when it was not; Latency leaves it out. Status is StatusClientGone
	// when its caller left meanwhile, 503 when the server cancelled the
	// wait.
	Held time.Duration
}

// RuleResult is one rule's decision.
type RuleResult struct {
	Rule     string
	Outcome  Outcome
	Decision limiter.Decision
}

// clientName is what names the caller to the protected handler
// (ClientHeader) and in the Report: its client id, "anonymous", or "" when
// the policy identifies nobody by key.
func clientName(pol *policy.Compiled, c *policy.Caller) string {
	switch {
	case c.ID != "":
		return c.ID
	case c == pol.Anonymous():
		return policy.AnonymousPlan
	}
	return ""
}

// judge turns the store's decisions into the answer: headers on w, and a 429
// or 503 written (false) or the request allowed to pass (true). spent
// reports whether the allowed decisions spent their cost (see decideAll).
func (l *Limiter) judge(w http.ResponseWriter, h http.Header, pol *policy.Compiled, caller *policy.Caller, addr netip.Addr,
	s *scratch, results []store.Result, spent bool, err error) bool {
	rep := &s.report
	s.headers = s.headers[:0]
	if err == nil && len(results) != len(s.reqs) {
		err = errShortBatch
	}
	if err != nil {
		for _, i := range s.index {
			rep.Rules = append(rep.Rules, RuleResult{Rule: pol.Rule(i).Name, Outcome: Failed})
		}
		return l.storeFailed(w, rep, err)
	}
	var violated []string
	var worst time.Duration
	worstRule, worstHeader := -1, -1
	for k, res := range results {
		i := s.index[k]
		rule := pol.Rule(i)
		if res.Err != nil {
			rep.Rules = append(rep.Rules, RuleResult{Rule: rule.Name, Outcome: Failed})
			if !l.storeFailed(w, rep, res.Err) {
				return false
			}
			continue
		}
		d := res.Decision
		out := outcome(rule, d, spent)
		if out == Limited {
			violated = append(violated, rule.Name)
			if d.RetryAfter > worst || worstRule < 0 {
				worst, worstRule, worstHeader = d.RetryAfter, k, len(s.headers)
			}
		}
		rep.Rules = append(rep.Rules, RuleResult{Rule: rule.Name, Outcome: out, Decision: d})
		if rule.Mode == policy.Enforce {
			s.headers = append(s.headers, ruleHeader{name: rule.Name, limit: d.Limit, window: policyWindow(s.reqs[k].Limit),
				remaining: d.Remaining, more: quotaSeconds(d)})
		}
	}
	if len(violated) == 0 {
		return true // decide writes the headers, with the concurrency rules'
	}
	// The legacy headers of a 429 speak of the rule whose Retry-After it has.
	setRateLimitHeaders(w.Header(), s.headers, s.legacy, worstHeader)
	rule := pol.Rule(s.index[worstRule])
	rep.Counted = counted(pol, caller, s.index[worstRule], addr, h)
	l.reject(w, rep, rep.Counted, rule.Name, s.reqs[worstRule].Limit, worst, violated)
	return false
}

// outcome is what rule's decision d says of the request, spent as in judge.
func outcome(rule *policy.Rule, d limiter.Decision, spent bool) Outcome {
	switch {
	case d.Allowed && spent && d.Delay > 0:
		return Delayed
	case d.Allowed && spent:
		return Allowed
	case d.Allowed:
		return NotSpent
	case rule.Mode == policy.Shadow:
		return ShadowLimited
	}
	return Limited
}

var errShortBatch = errors.New("httplimit: store returned too few results")

// reject writes the 429. Retry-After is the longest wait among the violated
// rules, in whole seconds rounded up; a cost no limit can ever allow gets
// no Retry-After, since waiting would not help.
func (l *Limiter) reject(w http.ResponseWriter, rep *Report, who, rule string, lim limiter.Limit, retry time.Duration, violated []string) {
	l.rejectWith(w, rep, limitedDetail(who, rule, lim, retry), retry, violated)
}

// rejectWith writes a 429 with the problem detail given.
func (l *Limiter) rejectWith(w http.ResponseWriter, rep *Report, detail string, retry time.Duration, violated []string) {
	rep.Status, rep.RetryAfter = http.StatusTooManyRequests, retry
	h := w.Header()
	if retry != limiter.Never {
		h["Retry-After"] = []string{itoa(retryAfterSeconds(retry))}
	}
	writeProblem(w, problem{Type: quotaExceeded, Title: "Too Many Requests", Status: http.StatusTooManyRequests,
		Detail: detail, ViolatedPolicies: violated})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
