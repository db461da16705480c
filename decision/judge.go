package decision

import (
	"net/netip"
	"time"

	"github.com/sluice-rl/sluice/internal/problem"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// judge turns the store's decisions into the answer: a 429 or 503 made
// (false) or the request allowed to pass (true), with each enforcing
// rule's RateLimit item in v.headers. spent reports whether the allowed
// decisions spent their cost (see decideAll).
func (e *Engine) judge(v *Verdict, pol *policy.Compiled, caller *policy.Caller, addr netip.Addr,
	results []store.Result, spent bool, err error) bool {
	rep := &v.Report
	v.headers = v.headers[:0]
	if err == nil && len(results) != len(v.reqs) {
		err = errShortBatch
	}
	if err != nil {
		for _, i := range v.index {
			rep.Rules = append(rep.Rules, RuleResult{Rule: pol.Rule(i).Name, Index: i, Outcome: Failed})
		}
		return e.storeFailed(v, err)
	}
	var worst time.Duration
	worstRule, worstHeader, worstShared := -1, -1, false
	for k, res := range results {
		rule := pol.Rule(v.index[k])
		if res.Err != nil {
			rep.Rules = append(rep.Rules, RuleResult{Rule: rule.Name, Index: v.index[k], Key: v.reqs[k].Key, Outcome: Failed})
			if !e.storeFailed(v, res.Err) {
				return false
			}
			continue
		}
		d := res.Decision
		out := outcome(rule, d, spent)
		if out == Limited {
			v.violated = append(v.violated, rule.Name)
			if d.RetryAfter > worst || worstRule < 0 {
				worst, worstRule, worstHeader, worstShared = d.RetryAfter, k, len(v.headers), res.Shared
			}
		}
		rep.Rules = append(rep.Rules, RuleResult{Rule: rule.Name, Index: v.index[k], Key: v.reqs[k].Key, Outcome: out, Decision: d, Shared: res.Shared})
		if rule.Mode == policy.Enforce {
			v.headers = append(v.headers, ruleHeader{name: rule.Name, limit: d.Limit, window: policyWindow(v.reqs[k].Limit),
				remaining: d.Remaining, more: quotaSeconds(d)})
		}
	}
	if len(v.violated) == 0 {
		return true // decide adds the headers, with the concurrency rules'
	}
	// The legacy headers of a 429 speak of the rule whose Retry-After it has.
	v.rateLimitHeaders(worstHeader)
	rule := pol.Rule(v.index[worstRule])
	rep.Counted = counted(pol, caller, v.index[worstRule], addr, v)
	if worstShared {
		v.sharedDetail(rep.Counted, rule.Name, v.reqs[worstRule].Limit, worst)
	} else {
		v.limitedDetail(rep.Counted, rule.Name, v.reqs[worstRule].Limit, worst)
	}
	v.reject(worst)
	return false
}

// reject makes the 429, its detail in v.detail and the rules it names in
// v.violated. Retry-After is the longest wait among the violated rules, in
// whole seconds rounded up; a cost no limit can ever allow gets no
// Retry-After, since waiting would not help.
func (v *Verdict) reject(retry time.Duration) {
	v.Report.Status, v.Report.RetryAfter = statusTooManyRequests, retry
	if retry != limiter.Never {
		v.retryAfter(retry)
	}
	v.answer(problem.Problem{Type: quotaExceeded, Title: "Too Many Requests", Status: statusTooManyRequests})
}
