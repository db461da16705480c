package decision

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/internal/problem"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/throttle"
)

// Options configure an Engine. Store is required.
type Options struct {
	// Store keeps the counters.
	Store store.Store
	// Clock is read once per request, and again for what is measured
	// (held, queued, the response's latency). Default clock.Real{}.
	Clock clock.Clock
	// OnFailure is what happens to a request the store cannot decide:
	// store.FailOpen (the default) lets it pass; store.FailClosed and
	// store.FailLocal answer 503 with Retry-After (a store that decides
	// locally while its shared counters are down, store/failover, does so
	// before the Engine sees an error). A store may also return a
	// *store.UnavailableError to ask for a 503 with its Retry-After,
	// whatever the policy.
	OnFailure store.FailurePolicy
	// Leaser holds the leases of concurrency rules (policy.Rule.Concurrency)
	// from a request's admission until Verdict.Finish. Default: Store, if
	// it is a store.Leaser, used as it is: a request that outlives LeaseTTL
	// then loses its slot. Wrap it in a store.Renewer to keep long
	// requests' slots. A policy with concurrency rules and no Leaser
	// decides them by OnFailure, as a store that cannot decide (CanDecide
	// tells beforehand).
	Leaser store.Leaser
	// LeaseTTL is the TTL of the leases (store.Concurrency.TTL). Default
	// store.DefaultLeaseTTL.
	LeaseTTL time.Duration
	// OnDecision, if set, is called once per request at the end of
	// Decide (metrics, logs), with the Request given to Decide. The Report
	// and its slices are valid only during the call.
	OnDecision func(*Request, *Report)
	// OnResponse, if set, is called once per request by Verdict.Finish,
	// after the after steps. The Response is valid only during the call.
	OnResponse func(*Request, *Response)
	// OnSettle, if set, is called when a settling rule's reservation
	// (count, cost_header) could not be settled as the response said: a
	// cost_header value that is missing or not a whole number of 0 or
	// more (a *CostError), or the store's error. The reservation then
	// stands as it was decided. Log it at a bounded rate: a broken
	// upstream calls it on every response.
	OnSettle func(req *Request, rule string, err error)
}

// Settings are what a request is decided under; a program swaps them
// whole (see httplimit.Settings).
type Settings struct {
	// Policy is the compiled policy. Required.
	Policy *policy.Compiled
	// LegacyHeaders also sends X-RateLimit-Limit/-Remaining/-Reset for the
	// most restrictive rule.
	LegacyHeaders bool
	// Throttle, if set, protects the service from the sum of all callers:
	// a request the per-caller rules allowed then takes a slot of it,
	// waits in its queue or is refused 503 with Retry-After; the slot is
	// given back by Verdict.Finish, with the response's outcome. A
	// request's priority is the highest of its matched rules' that set one
	// (Normal when none does), raised to its plan's. Nil throttles
	// nothing.
	Throttle *throttle.Throttle
	// Pressure, if set and on, refuses every request of a degrade rule
	// and every low-priority one 503, as if the service were above
	// protect's shed_from, with or without a Throttle: the operator's
	// degrade switch, an outside signal. Nil or off: nothing changes.
	Pressure *Pressure
}

// Engine decides requests. It is safe for concurrent use and holds no
// policy of its own: each Decide names the Settings it decides under.
type Engine struct {
	opts Options
	keys atomic.Pointer[keyCache]
	pool sync.Pool
}

// ErrNoLeaser is CanDecide's answer for a policy with concurrency rules
// when the Engine has no store.Leaser.
var ErrNoLeaser = errors.New("decision: the policy has concurrency rules, and the store keeps no leases (a store.Leaser, Options.Leaser)")

// New returns an Engine for opts.
func New(opts Options) (*Engine, error) {
	if opts.Store == nil {
		return nil, errors.New("decision: no store")
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Leaser == nil {
		opts.Leaser, _ = opts.Store.(store.Leaser)
	}
	if err := (store.Concurrency{TTL: opts.LeaseTTL}).Check(); err != nil {
		return nil, fmt.Errorf("decision: LeaseTTL: %w", err)
	}
	e := &Engine{opts: opts}
	e.pool.New = func() any { return new(Verdict) }
	return e, nil
}

// CanDecide reports whether the Engine can decide every rule of pol:
// ErrNoLeaser for a policy with concurrency rules and no Leaser.
func (e *Engine) CanDecide(pol *policy.Compiled) error {
	if e.opts.Leaser == nil && limitsInFlight(pol) {
		return ErrNoLeaser
	}
	return nil
}

// limitsInFlight reports whether pol has a concurrency rule.
func limitsInFlight(pol *policy.Compiled) bool {
	for i := range pol.Rules() {
		if pol.Rule(i).LimitsInFlight() {
			return true
		}
	}
	return false
}

// Decide decides req under set: it identifies the caller, refuses a
// blocked one (403, block.go), cleans the method and path, matches the
// rules, asks the store for all of them at
// once, holds the request for its turn under a rule with a delay, takes
// the leases of its concurrency rules and a slot of set.Throttle, and
// returns the answer as a Verdict. It may wait (a held request, the
// throttle's queue) until ctx ends. The Verdict must be given back with
// Finish, exactly once, whether it passed or not: that gives back what the
// request holds. set.Policy must not be nil.
func (e *Engine) Decide(ctx context.Context, set Settings, req Request) *Verdict {
	v := e.pool.Get().(*Verdict)
	v.start(e, ctxOr(ctx), req)
	done := false
	defer func() {
		if !done { // a store or OnDecision panicked: give back what the request took; the panic goes on
			v.Finish(&Response{Status: 500, Aborted: true, Unanswered: true})
		}
	}()
	e.decide(v, &set)
	done = true
	return v
}

// decide is Decide's work: on return v holds the answer.
func (e *Engine) decide(v *Verdict, set *Settings) {
	pol := set.Policy
	now := e.opts.Clock.Now()
	v.legacy = set.LegacyHeaders
	rep := &v.Report
	defer e.report(v, now)
	key := pol.KeyName()
	v.scrub(pol)
	caller, err := identify(pol, v, key)
	if caller == nil {
		e.unidentified(v, pol, err)
		return
	}
	v.Client = clientName(pol, caller)
	rep.Client = cmp.Or(v.Client, "-")
	rep.pol, rep.caller, rep.v = pol, caller, v
	if v.clientBlocked(caller, now) {
		return
	}
	if err := v.clean(pol); err != nil {
		v.badRequest(pathDetail(err))
		return
	}
	addr := clientAddr(pol, v)
	v.Addr = addr
	if v.addrBlocked(pol, addr, now) {
		return
	}
	v.matchRules(pol)
	v.requests(pol, caller, addr)
	if detail, refused := v.headerRefused(pol); refused {
		v.badRequest(detail)
		return
	}
	e.decideRules(v, pol, caller, addr, now)
	if v.Pass {
		e.protect(v, set, pol, caller, addr)
	}
}

// decideRules decides the rate rules, then holds the request for its turn,
// then the concurrency rules, leaving v.Pass set.
func (e *Engine) decideRules(v *Verdict, pol *policy.Compiled, caller *policy.Caller, addr netip.Addr, now time.Time) {
	var results []store.Result
	var err error
	spent := true
	if len(v.reqs) > 0 {
		results, spent, err = e.decideAll(v.ctx, v, now)
	}
	pass := e.judge(v, pol, caller, addr, results, spent, err)
	v.reserve(pol, results, spent)
	if pass && spent {
		pass = e.hold(v, results, now)
	}
	switch {
	case pass && len(v.leaseIndex) > 0:
		pass = e.acquire(v, pol, caller, addr, now)
	case len(v.leaseIndex) > 0: // refused before the concurrency rules were asked
		for _, i := range v.leaseIndex {
			v.Report.Rules = append(v.Report.Rules, RuleResult{Rule: pol.Rule(i).Name, Index: i, Outcome: NotSpent})
		}
	}
	if pass {
		v.rateLimitHeaders(-1)
	}
	v.Pass = pass
}

// unidentified answers a request whose key sluice cannot accept: 400 for a
// key header it cannot read one way only (err), else 401. Nothing is
// counted.
func (e *Engine) unidentified(v *Verdict, pol *policy.Compiled, err error) {
	v.Report.Client = UnknownClient
	if err != nil {
		v.badRequest(err.Error())
		return
	}
	v.Report.Status = statusUnauthorized
	b := append(v.buf, `ApiKey header="`...)
	b = append(b, pol.KeyHeader()...)
	v.buf = append(b, '"')
	v.setField("Www-Authenticate", len(b)-len(`ApiKey header="`)-len(pol.KeyHeader()))
	v.detail = append(append(v.detail[:0], unauthorizedDetail(v)...), pol.KeyHeader()...)
	v.answer(problem.Problem{Title: "Unauthorized", Status: statusUnauthorized})
}

// unauthorizedDetail is the start of a 401's detail, the key header's
// name to follow.
func unauthorizedDetail(v *Verdict) string {
	if v.req.Cert != nil {
		return "the client certificate names no client, and no known access key is in "
	}
	return "missing or unknown access key in "
}

// report finishes the Report and hands it to Options.OnDecision.
func (e *Engine) report(v *Verdict, start time.Time) {
	v.Status = v.Report.Status
	v.Report.At = e.opts.Clock.Now()
	v.Report.Latency = v.Report.At.Sub(start) - v.Report.Held
	if e.opts.OnDecision != nil {
		e.opts.OnDecision(&v.req, &v.Report)
	}
}

// storeFailed answers a request whose decision the store could not make
// (false), or lets it pass (fail open: true).
func (e *Engine) storeFailed(v *Verdict, err error) bool {
	rep := &v.Report
	rep.Err = err
	refused, u := e.opts.OnFailure.Refused(err)
	if !refused {
		return true
	}
	retry := time.Second
	if u != nil && u.RetryAfter > 0 {
		retry = u.RetryAfter
	}
	rep.Status, rep.RetryAfter = statusUnavailable, retry
	v.retryAfter(retry)
	v.detail = append(v.detail[:0], "the rate limiter cannot count this request right now; retry later"...)
	v.answer(problem.Problem{Title: "Service Unavailable", Status: statusUnavailable})
	return false
}

// The statuses the Engine answers with (net/http's names, without it).
const (
	statusBadRequest      = 400
	statusUnauthorized    = 401
	statusTooManyRequests = 429
	statusUnavailable     = 503
)

var errShortBatch = errors.New("decision: store returned too few results")
