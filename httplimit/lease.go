package httplimit

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strconv"
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

var errNoLeaser = errors.New("httplimit: the policy has concurrency rules, and the store keeps no leases (a store.Leaser, Options.Leaser)")

// limitsInFlight reports whether pol has a concurrency rule.
func limitsInFlight(pol *policy.Compiled) bool {
	for i := range pol.Rules() {
		if pol.Rule(i).LimitsInFlight() {
			return true
		}
	}
	return false
}

// acquire decides the concurrency rules in s.leaseIndex for a request the
// rate rules allowed, appending their results to the report and their
// headers to s.headers. It reports true if the request may pass, the
// leases taken held by s.leases, an after step; otherwise it has answered
// the request (429, or 503 by OnFailure) and holds nothing.
func (l *Limiter) acquire(w http.ResponseWriter, r *http.Request, pol *policy.Compiled, caller *policy.Caller, addr netip.Addr,
	s *scratch, now time.Time) bool {
	rep := &s.report
	first := len(rep.Rules) // the concurrency rules' results start here
	held := s.leases.held[:0]
	for k, i := range s.leaseIndex {
		rule := pol.Rule(i)
		d, err := l.acquireOne(r.Context(), s.leaseKeys[k], store.Concurrency{Max: caller.Concurrency(i), TTL: l.opts.LeaseTTL}, now, rule.Cost)
		if err != nil {
			rep.Rules = append(rep.Rules, RuleResult{Rule: rule.Name, Outcome: Failed})
			if l.storeFailed(w, rep, err) {
				continue // fail open: admitted without a lease
			}
			l.giveBack(r.Context(), held, rep, first, s.leaseIndex[k+1:], pol)
			return false
		}
		out := Allowed
		switch {
		case !d.Allowed && rule.Mode == policy.Shadow:
			out = ShadowLimited
		case !d.Allowed:
			rep.Rules = append(rep.Rules, RuleResult{Rule: rule.Name, Outcome: Limited, Decision: leaseDecision(d)})
			s.headers = append(s.headers, ruleHeader{name: rule.Name, limit: d.Limit, remaining: d.Remaining(), inFlight: true})
			l.giveBack(r.Context(), held, rep, first, s.leaseIndex[k+1:], pol)
			l.refuseInFlight(w, r.Header, pol, caller, addr, s, i, d)
			return false
		}
		if !d.Lease.IsZero() {
			held = append(held, d.Lease)
		}
		rep.Rules = append(rep.Rules, RuleResult{Rule: rule.Name, Outcome: out, Decision: leaseDecision(d)})
		if rule.Mode == policy.Enforce {
			s.headers = append(s.headers, ruleHeader{name: rule.Name, limit: d.Limit, remaining: d.Remaining(), inFlight: true})
		}
	}
	s.leases.held = held
	if len(held) > 0 {
		s.after = append(s.after, &s.leases)
	}
	return true
}

// leaseStep is the after step (after.go) that gives back the leases a
// request holds once it is answered: its response written, the caller
// gone, the handler panicked, or the request refused after the
// concurrency rules (by throttling).
type leaseStep struct{ held []store.Lease }

func (st *leaseStep) after(l *Limiter, r *http.Request, _ *Response) {
	l.release(r.Context(), st.held)
	clear(st.held) // the pooled scratch keeps no keys
	st.held = st.held[:0]
}

// acquireOne asks the Leaser for one lease.
func (l *Limiter) acquireOne(ctx context.Context, key string, limit store.Concurrency, now time.Time, cost int64) (store.LeaseDecision, error) {
	if l.opts.Leaser == nil {
		return store.LeaseDecision{}, errNoLeaser
	}
	return l.opts.Leaser.Acquire(ctx, key, limit, now, cost)
}

// giveBack releases the leases a refused request took, reports the rules
// that had given them (from rep.Rules[first:]) NotSpent, and the rules
// not asked (rest) NotSpent too.
func (l *Limiter) giveBack(ctx context.Context, held []store.Lease, rep *Report, first int, rest []int, pol *policy.Compiled) {
	l.release(ctx, held)
	clear(held)
	for k := first; k < len(rep.Rules); k++ {
		if rep.Rules[k].Outcome == Allowed {
			rep.Rules[k].Outcome = NotSpent
		}
	}
	for _, i := range rest {
		rep.Rules = append(rep.Rules, RuleResult{Rule: pol.Rule(i).Name, Outcome: NotSpent})
	}
}

// release gives leases back, on a context that outlives the request's (a
// caller that went away has canceled it), at the clock's now. A release
// that fails is not retried: the lease expires within its TTL.
func (l *Limiter) release(ctx context.Context, held []store.Lease) {
	ctx = context.WithoutCancel(ctx)
	now := l.opts.Clock.Now()
	for _, lease := range held {
		_ = l.opts.Leaser.Release(ctx, lease, now)
	}
}

// refuseInFlight writes the 429 of concurrency rule i, whose decision was d,
// with the headers of every rule decided so far.
func (l *Limiter) refuseInFlight(w http.ResponseWriter, h http.Header, pol *policy.Compiled, caller *policy.Caller, addr netip.Addr,
	s *scratch, i int, d store.LeaseDecision) {
	rep, rule := &s.report, pol.Rule(i)
	setRateLimitHeaders(w.Header(), s.headers, s.legacy, len(s.headers)-1)
	rep.Counted = counted(pol, caller, i, addr, h)
	l.rejectWith(w, rep, inFlightDetail(rep.Counted, rule, d), d.RetryAfter, []string{rule.Name})
}

// leaseDecision is a lease decision as a Report carries decisions.
func leaseDecision(d store.LeaseDecision) limiter.Decision {
	return limiter.Decision{Allowed: d.Allowed, Limit: d.Limit, Remaining: d.Remaining(), RetryAfter: d.RetryAfter}
}

// inFlightDetail is the problem detail of a concurrency rule's 429, as a
// rate rule's reads: "partner-a exceeded 10 requests in flight (rule
// partner-in-flight); retry in 1s".
func inFlightDetail(who string, rule *policy.Rule, d store.LeaseDecision) string {
	b := who + " exceeded " + requests(d.Limit) + " in flight (rule " + rule.Name
	if d.RetryAfter == limiter.Never {
		return b + "); this request costs more than the limit allows at once and will never pass"
	}
	return b + "); retry in " + strconv.FormatInt(retryAfterSeconds(d.RetryAfter), 10) + "s"
}
