package decision

import (
	"context"
	"net/netip"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// Concurrency rules (policy.Rule.Concurrency): a request the rate rules
// allowed takes a lease of its cost on each matching concurrency rule's
// key, in rule order, and holds them until its response ends. A rule over
// its limit refuses the request with a 429 and the leases already taken
// are given back at once; the rules after it are not asked.

// acquire decides the concurrency rules in v.leaseIndex for a request the
// rate rules allowed, appending their results to the report and their
// headers to v.headers. It reports true if the request may pass, the
// leases taken held by v.leases, an after step; otherwise it has answered
// the request (429, or 503 by OnFailure) and holds nothing.
func (e *Engine) acquire(v *Verdict, pol *policy.Compiled, caller *policy.Caller, addr netip.Addr, now time.Time) bool {
	rep := &v.Report
	first := len(rep.Rules) // the concurrency rules' results start here
	held := v.leases.held[:0]
	for k, i := range v.leaseIndex {
		rule := pol.Rule(i)
		d, err := e.acquireOne(v.ctx, v.leaseKeys[k], store.Concurrency{Max: caller.Concurrency(i), TTL: e.opts.LeaseTTL}, now, rule.Cost)
		if err != nil {
			rep.Rules = append(rep.Rules, RuleResult{Rule: rule.Name, Index: i, Key: v.leaseKeys[k], Outcome: Failed})
			if e.storeFailed(v, err) {
				continue // fail open: admitted without a lease
			}
			e.giveBack(v.ctx, held, rep, first, v.leaseIndex[k+1:], pol)
			return false
		}
		out := Allowed
		switch {
		case !d.Allowed && rule.Mode == policy.Shadow:
			out = ShadowLimited
		case !d.Allowed:
			rep.Rules = append(rep.Rules, RuleResult{Rule: rule.Name, Index: i, Key: v.leaseKeys[k], Outcome: Limited, Decision: leaseDecision(d)})
			v.headers = append(v.headers, ruleHeader{name: rule.Name, limit: d.Limit, remaining: d.Remaining(), inFlight: true})
			e.giveBack(v.ctx, held, rep, first, v.leaseIndex[k+1:], pol)
			v.refuseInFlight(pol, caller, addr, i, d)
			return false
		}
		if !d.Lease.IsZero() {
			held = append(held, d.Lease)
		}
		rep.Rules = append(rep.Rules, RuleResult{Rule: rule.Name, Index: i, Key: v.leaseKeys[k], Outcome: out, Decision: leaseDecision(d)})
		if rule.Mode == policy.Enforce {
			v.headers = append(v.headers, ruleHeader{name: rule.Name, limit: d.Limit, remaining: d.Remaining(), inFlight: true})
		}
	}
	v.leases.held = held
	if len(held) > 0 {
		v.after = append(v.after, &v.leases)
	}
	return true
}

// leaseStep is the after step (after.go) that gives back the leases a
// request holds once it is answered: its response written, the caller
// gone, the transport broke off, or the request refused after the
// concurrency rules (by throttling).
type leaseStep struct{ held []store.Lease }

func (st *leaseStep) after(v *Verdict, _ *Response) {
	v.e.release(v.ctx, st.held)
	clear(st.held) // the pooled Verdict keeps no keys
	st.held = st.held[:0]
}

// acquireOne asks the Leaser for one lease.
func (e *Engine) acquireOne(ctx context.Context, key store.Key, limit store.Concurrency, now time.Time, cost int64) (store.LeaseDecision, error) {
	if e.opts.Leaser == nil {
		return store.LeaseDecision{}, ErrNoLeaser
	}
	return e.opts.Leaser.Acquire(ctx, key, limit, now, cost)
}

// giveBack releases the leases a refused request took, reports the rules
// that had given them (from rep.Rules[first:]) NotSpent, and the rules
// not asked (rest) NotSpent too.
func (e *Engine) giveBack(ctx context.Context, held []store.Lease, rep *Report, first int, rest []int, pol *policy.Compiled) {
	e.release(ctx, held)
	clear(held)
	for k := first; k < len(rep.Rules); k++ {
		if rep.Rules[k].Outcome == Allowed {
			rep.Rules[k].Outcome = NotSpent
		}
	}
	for _, i := range rest {
		rep.Rules = append(rep.Rules, RuleResult{Rule: pol.Rule(i).Name, Index: i, Outcome: NotSpent})
	}
}

// release gives leases back, on a context that outlives the request's (a
// caller that went away has canceled it), at the clock's now. A release
// that fails is not retried: the lease expires within its TTL.
func (e *Engine) release(ctx context.Context, held []store.Lease) {
	ctx = context.WithoutCancel(ctx)
	now := e.opts.Clock.Now()
	for _, lease := range held {
		_ = e.opts.Leaser.Release(ctx, lease, now)
	}
}

// refuseInFlight makes the 429 of concurrency rule i, whose decision was
// d, with the headers of every rule decided so far.
func (v *Verdict) refuseInFlight(pol *policy.Compiled, caller *policy.Caller, addr netip.Addr, i int, d store.LeaseDecision) {
	rep, rule := &v.Report, pol.Rule(i)
	v.rateLimitHeaders(len(v.headers) - 1)
	rep.Counted = counted(pol, caller, i, addr, v)
	v.inFlightDetail(rep.Counted, rule, d)
	v.violated = append(v.violated[:0], rule.Name)
	v.reject(d.RetryAfter)
}

// leaseDecision is a lease decision as a Report carries decisions.
func leaseDecision(d store.LeaseDecision) limiter.Decision {
	return limiter.Decision{Allowed: d.Allowed, Limit: d.Limit, Remaining: d.Remaining(), RetryAfter: d.RetryAfter}
}
