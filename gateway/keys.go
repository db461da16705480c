package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// counterJSON is one rule's counter as /api/v1/keys and /api/v1/explain
// show it. It never holds an access key: Counted names what is counted
// as decision.LookResult does.
type counterJSON struct {
	Rule        string  `json:"rule"`
	Client      string  `json:"client,omitempty"`
	Counted     string  `json:"counted"`
	Mode        string  `json:"mode"`
	Algorithm   string  `json:"algorithm,omitempty"` // rate rules
	Rate        string  `json:"rate,omitempty"`      // the limit in force, as the file writes it: 100/m
	Concurrency int64   `json:"concurrency,omitempty"`
	Limit       int64   `json:"limit"`              // what Remaining counts down from (q of RateLimit-Policy)
	WindowS     float64 `json:"window_s,omitempty"` // w of RateLimit-Policy
	Source      string  `json:"source"`             // rule, plan:NAME, client:ID, override:TARGET
	Remaining   int64   `json:"remaining"`
	InFlight    *int64  `json:"in_flight,omitempty"` // concurrency rules
	Used        float64 `json:"used"`                // share of the limit used now, 0 to 1
	ResetS      float64 `json:"reset_s"`             // until the counter is full again
	RetryS      float64 `json:"retry_s"`             // until a request of the rule's cost passes; -1: never
	Cost        int64   `json:"cost,omitempty"`
	Exempt      bool    `json:"exempt,omitempty"`
	Classifies  bool    `json:"classifies,omitempty"`
	Counter     string  `json:"counter"` // shared, local (this instance's own) or none
	Error       string  `json:"error,omitempty"`
}

// counterOf is res as JSON; where says whose counter it is (storeInfo's
// counterKind).
func counterOf(res decision.LookResult, client, where string) counterJSON {
	c := counterJSON{Rule: res.Rule, Client: client, Counted: res.Counted, Mode: res.Mode.String(), Source: res.Source,
		Exempt: res.Exempt, Classifies: res.Classifies, Counter: where, Cost: res.Cost}
	if res.Classifies || res.Exempt {
		c.Counter = "none"
		return c
	}
	d := res.Decision
	c.Limit, c.Remaining, c.ResetS = d.Limit, d.Remaining, seconds(d.Reset)
	if res.Concurrency > 0 {
		c.Concurrency, c.InFlight = res.Concurrency, &res.InFlight
	} else {
		c.Algorithm = res.Limit.Algorithm().String()
		c.Rate = policy.Rate{N: res.Limit.Rate(), Period: res.Limit.Period()}.String()
		c.WindowS = seconds(res.Window)
	}
	if c.Limit > 0 {
		c.Used = float64(c.Limit-min(c.Remaining, c.Limit)) / float64(c.Limit)
	}
	c.RetryS = seconds(res.Retry)
	if res.Retry == limiter.Never {
		c.RetryS = -1
	}
	if res.Err != nil {
		c.Error = res.Err.Error()
	}
	return c
}

// seconds is d in seconds, to the millisecond.
func seconds(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }

// keys answers GET /api/v1/keys?rule=R&client=C&counted=V (a counter now,
// without spending) and DELETE (reset it, on every instance that shares
// it).
func (g *Gateway) keys(w http.ResponseWriter, r *http.Request) {
	q, err := singleParams(r.URL.RawQuery, "rule", "client", "counted")
	if err != nil {
		writeProblem(w, http.StatusBadRequest, err.Error())
		return
	}
	set := g.snap.Load().front.Settings
	if q["rule"] == "" {
		writeProblem(w, http.StatusBadRequest, "rule=NAME is required (rules: "+strings.Join(ruleNames(set.Policy), ", ")+")")
		return
	}
	target := decision.Target{Client: q["client"], Counted: q["counted"]}
	if r.Method == http.MethodDelete {
		g.resetKey(w, r, set, q["rule"], target)
		return
	}
	res, err := g.engine.Look(r.Context(), set, q["rule"], target)
	if status, detail := lookProblem(err); status != 0 {
		writeProblem(w, status, detail)
		return
	}
	writeJSON(w, http.StatusOK, counterOf(res, target.Client, g.storeInfo().counterKind()))
}

// resetJSON is the answer to DELETE /api/v1/keys.
type resetJSON struct {
	Reset bool        `json:"reset"`
	Rule  string      `json:"rule"`
	Was   counterJSON `json:"was"` // the counter just before
	// Confirmed of Told instances confirmed forgetting their cached
	// rejections, when not every one did in time (Warning says so).
	Confirmed *int   `json:"confirmed,omitempty"`
	Told      *int   `json:"told,omitempty"`
	Warning   string `json:"warning,omitempty"`
}

// resetKey resets the counter of rule that target names.
func (g *Gateway) resetKey(w http.ResponseWriter, r *http.Request, set decision.Settings, rule string, target decision.Target) {
	res, err := g.engine.Reset(r.Context(), set, rule, target)
	var unconfirmed *store.UnconfirmedResetError
	if errors.As(err, &unconfirmed) {
		writeJSON(w, http.StatusOK, resetJSON{Reset: true, Rule: rule, Was: counterOf(res, target.Client, g.storeInfo().counterKind()),
			Confirmed: &unconfirmed.Confirmed, Told: &unconfirmed.Told, Warning: unconfirmed.Error()})
		return
	}
	if status, detail := lookProblem(err); status != 0 {
		writeProblem(w, status, detail)
		return
	}
	if res.Classifies || res.Exempt {
		writeProblem(w, http.StatusBadRequest, fmt.Sprintf("rule %s counts nothing for %s: there is no counter to reset", rule, res.Counted))
		return
	}
	g.log.Info("counter reset", "rule", rule, "client", target.Client, "counted", res.Counted, "admin", r.RemoteAddr)
	writeJSON(w, http.StatusOK, resetJSON{Reset: true, Rule: rule, Was: counterOf(res, target.Client, g.storeInfo().counterKind())})
}

// lookProblem is the status and detail of a look's error: 404 for an
// unknown rule or client, 400 for a target the rule does not count by,
// 503 when the store cannot be read; 0 for none.
func lookProblem(err error) (int, string) {
	var nf *decision.NotFoundError
	var te *decision.TargetError
	switch {
	case err == nil:
		return 0, ""
	case errors.As(err, &nf):
		return http.StatusNotFound, nf.Error()
	case errors.As(err, &te):
		return http.StatusBadRequest, te.Error()
	}
	return http.StatusServiceUnavailable, "the store cannot be read: " + err.Error()
}

// singleParams parses a query of the parameters named, each at most once:
// an unknown parameter, one given twice or a query that does not parse is
// an error that says which are accepted.
func singleParams(raw string, names ...string) (map[string]string, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, fmt.Errorf("the query cannot be parsed: %v", err)
	}
	out := map[string]string{}
	for k, vs := range q {
		if !slices.Contains(names, k) {
			return nil, fmt.Errorf("unknown parameter %q (accepted: %s)", k, strings.Join(names, ", "))
		}
		if len(vs) > 1 {
			return nil, fmt.Errorf("%s given %d times (give it once)", k, len(vs))
		}
		out[k] = vs[0]
	}
	return out, nil
}

// ruleNames lists the policy's rules.
func ruleNames(pol *policy.Compiled) []string {
	names := make([]string, pol.Rules())
	for i := range names {
		names[i] = pol.Rule(i).Name
	}
	return names
}

// writeProblem answers status with an application/problem+json body.
func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(decision.AppendProblem(nil, status, http.StatusText(status), detail))
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		writeProblem(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
