// Package httplimit is sluice's decision as net/http middleware: it
// identifies the caller (access key, or IP behind trusted proxies), finds the
// rules that match the request, asks the store for one decision per rule
// (one batch, one clock read), and either passes the request on with
// RateLimit headers or answers 429 itself, with Retry-After and a problem
// detail, without touching the handler behind it. Concurrency rules
// (policy.Rule.Concurrency) are decided after the rate rules allowed the
// request: each takes a lease (Options.Leaser) that the request holds until
// its response ends. The gateway is built on it; a Go program can put it in
// front of any handler.
package httplimit

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/throttle"
)

// ClientHeader tells the protected handler who the caller is. A copy sent
// by the caller is always removed, in every spelling. A proxy behind the
// Limiter must set it on its outgoing request after removing hop-by-hop
// headers, as the gateway does: a caller may name it in Connection. The
// same holds for the access key header and the headers header:NAME rules
// count by, which the upstream must receive as they were counted.
const ClientHeader = policy.ClientHeader

// Options configure a Limiter. Policy and Store are required.
type Options struct {
	// Policy is the compiled policy; SetPolicy replaces it later.
	Policy *policy.Compiled
	// Store keeps the counters.
	Store store.Store
	// Clock is read once per request. Default clock.Real{}.
	Clock clock.Clock
	// LegacyHeaders also sends X-RateLimit-Limit/-Remaining/-Reset for the
	// most restrictive rule. Default false.
	LegacyHeaders bool
	// OnFailure is what happens to a request the store cannot decide:
	// store.FailOpen (the default) lets it pass; store.FailClosed and
	// store.FailLocal answer 503 with Retry-After (a store that decides
	// locally while its shared counters are down, store/failover, does so
	// before httplimit sees an error). A store may also return a
	// *store.UnavailableError to ask for a 503 with its Retry-After,
	// whatever the policy.
	OnFailure store.FailurePolicy
	// FailClosed answers 503 when the store cannot decide.
	//
	// Deprecated: set OnFailure to store.FailClosed. FailClosed true is
	// the same; false leaves OnFailure in force.
	FailClosed bool
	// Leaser holds the leases of concurrency rules (policy.Rule.Concurrency)
	// from a request's admission until its response ends. Default: Store,
	// if it is a store.Leaser, used as it is: a request that outlives
	// LeaseTTL then loses its slot. Wrap it in a store.Renewer, as the
	// gateway does, to keep long requests' slots. New fails if the policy
	// has concurrency rules and there is no Leaser; a policy set later
	// decides them by OnFailure, as a store that cannot decide.
	Leaser store.Leaser
	// LeaseTTL is the TTL of the leases (store.Concurrency.TTL): a lease
	// not renewed or released is gone after it. Default
	// store.DefaultLeaseTTL.
	LeaseTTL time.Duration
	// OnDecision, if set, is called once per request after the decision,
	// before the handler runs (metrics, logs). The Report and its slices
	// are valid only during the call.
	OnDecision func(*http.Request, *Report)
	// OnResponse, if set, is called once per request after it was
	// answered, by the handler or by the Limiter itself (metrics of the
	// upstream's answers). The Response is valid only during the call.
	// Setting it makes every passed request's handler write through a
	// recorder of the status.
	OnResponse func(*http.Request, *Response)
	// Throttle, if set, protects the handler from the sum of all callers
	// (DESIGN's protect): a request the per-caller rules allowed then
	// takes a slot of it, waits in its queue or is refused 503 with
	// Retry-After; the slot is released after the response, with its
	// outcome. A request's priority is the highest of its matched rules'
	// that set one (policy.Rule.Priority; Normal when none does), raised
	// to its plan's. Default nil: nothing is throttled. SetThrottle replaces it.
	Throttle *throttle.Throttle
	// OnSettle, if set, is called when a settling rule's reservation
	// (count, cost_header: settle.go) could not be settled as the response
	// said: a cost_header value that is missing or not a whole number of
	// 0 or more (a *CostError), or the store's error. The reservation then
	// stands as it was decided. Log it at a bounded rate: a broken
	// upstream calls it on every response.
	OnSettle func(r *http.Request, rule string, err error)
}

// Settings are what a request is decided under: the policy and whether
// legacy headers are sent. A Limiter holds one Settings value and replaces
// it whole, so that no request sees a policy from one change and legacy
// headers from another.
type Settings struct {
	// Policy is the compiled policy.
	Policy *policy.Compiled
	// LegacyHeaders is Options.LegacyHeaders.
	LegacyHeaders bool
	// Throttle is Options.Throttle: nil throttles nothing. A program that
	// swaps whole configurations (the gateway) keeps one Throttle for its
	// life and Updates it, turning it on and off through Settings.
	Throttle *throttle.Throttle
}

// Limiter is the middleware. It is safe for concurrent use.
type Limiter struct {
	opts     Options
	settings atomic.Pointer[Settings]
	setMu    sync.Mutex // serialises SetPolicy and SetLegacyHeaders
	scratch  sync.Pool
}

// New returns a Limiter for opts.
func New(opts Options) (*Limiter, error) {
	if opts.Policy == nil {
		return nil, errors.New("httplimit: no policy")
	}
	if opts.Store == nil {
		return nil, errors.New("httplimit: no store")
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.FailClosed && opts.OnFailure == store.FailOpen {
		opts.OnFailure = store.FailClosed
	}
	if opts.Leaser == nil {
		opts.Leaser, _ = opts.Store.(store.Leaser)
	}
	if opts.Leaser == nil && limitsInFlight(opts.Policy) {
		return nil, errNoLeaser
	}
	if err := (store.Concurrency{TTL: opts.LeaseTTL}).Check(); err != nil {
		return nil, fmt.Errorf("httplimit: LeaseTTL: %w", err)
	}
	l := &Limiter{opts: opts}
	l.settings.Store(&Settings{Policy: opts.Policy, LegacyHeaders: opts.LegacyHeaders, Throttle: opts.Throttle})
	l.scratch.New = func() any { return new(scratch) }
	return l, nil
}

// SetPolicy replaces the policy for the requests that start after it.
func (l *Limiter) SetPolicy(p *policy.Compiled) {
	l.update(func(s *Settings) { s.Policy = p })
}

// SetLegacyHeaders switches the X-RateLimit-* headers on or off for the
// requests that start after it.
func (l *Limiter) SetLegacyHeaders(on bool) {
	l.update(func(s *Settings) { s.LegacyHeaders = on })
}

// SetThrottle replaces the Throttle (nil: none) for the requests that
// start after it; requests holding a slot of the old one release it there.
func (l *Limiter) SetThrottle(t *throttle.Throttle) {
	l.update(func(s *Settings) { s.Throttle = t })
}

func (l *Limiter) update(change func(*Settings)) {
	l.setMu.Lock()
	defer l.setMu.Unlock()
	s := *l.settings.Load()
	change(&s)
	l.settings.Store(&s)
}

// Policy returns the policy in force.
func (l *Limiter) Policy() *policy.Compiled { return l.settings.Load().Policy }

// Handler returns next behind the limiter, deciding each request under the
// settings in force when it starts. next receives the request with its
// method and path as the rules matched them (see policy.CleanPath) and
// without the headers a caller must not pass on (X-Sluice-Client, the
// method-override headers, other spellings of the key header).
func (l *Limiter) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.serve(w, r, l.settings.Load(), next)
	})
}

// HandlerWith returns next behind the limiter, deciding every request
// under s whatever SetPolicy and SetLegacyHeaders say. A program that swaps
// whole configurations (the gateway: policy and upstream) builds one
// handler per configuration, so that a request is decided and served under
// the same one. s.Policy must not be nil. next receives the request as
// Handler's does.
func (l *Limiter) HandlerWith(s Settings, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.serve(w, r, &s, next)
	})
}

// scratch is the per-request working memory, pooled.
type scratch struct {
	match      []int
	reqs       []store.Request
	index      []int // rule index of each request
	leaseIndex []int // rule index of each concurrency rule to decide
	leaseKeys  []string
	headers    []ruleHeader
	again      []store.Request
	denied     []int
	held       []int // requests that may be held for their turn (delay.go)
	legacy     bool  // the request's Settings.LegacyHeaders
	report     Report
	after      []afterStep // run once the request is answered (after.go)
	settled    bool        // the after steps have been started
	rec        recorder    // the passed request's ResponseWriter, when after is not empty
	resp       Response    // what the after steps are given
	slot       slotStep    // the request's throttle slot (protect.go)
	leases     leaseStep   // the leases the request holds (lease.go)
	settle     settleStep  // the reservations to settle (settle.go)
}

// decide answers the request itself (false) or prepares it to pass (true),
// returning the request to pass on. A request passed on holds the leases
// of its concurrency rules until its after steps run.
func (l *Limiter) decide(w http.ResponseWriter, r *http.Request, set *Settings, s *scratch) (*http.Request, bool) {
	pol := set.Policy
	now := l.opts.Clock.Now()
	key := pol.KeyName()
	scrubHeaders(r.Header, key)
	s.legacy = set.LegacyHeaders
	rep := &s.report
	*rep = Report{Rules: rep.Rules[:0]}
	caller, err := identify(pol, r, key)
	if caller == nil {
		l.unidentified(w, r, pol, rep, now, err)
		return r, false
	}
	name := clientName(pol, caller)
	rep.Client = cmp.Or(name, "-")
	if r, err = cleanRequest(r); err != nil {
		l.badRequest(w, r, rep, now, pathDetail(err))
		return r, false
	}
	addr := clientAddr(pol, r)
	s.match = pol.Match(r.Method, r.URL.Path, s.match[:0])
	l.requests(pol, caller, addr, r, s)
	if detail, refused := headerRefused(pol, s, r.Header); refused {
		l.badRequest(w, r, rep, now, detail)
		return r, false
	}
	var results []store.Result
	spent := true
	if len(s.reqs) > 0 {
		results, spent, err = l.decideAll(r.Context(), s, now)
	}
	pass := l.judge(w, r.Header, pol, caller, addr, s, results, spent, err)
	l.reserve(pol, s, results, spent)
	if pass && spent {
		pass = l.hold(w, r, s, results, now)
	}
	switch {
	case pass && len(s.leaseIndex) > 0:
		pass = l.acquire(w, r, pol, caller, addr, s, now)
	case len(s.leaseIndex) > 0: // refused before the concurrency rules were asked
		for _, i := range s.leaseIndex {
			rep.Rules = append(rep.Rules, RuleResult{Rule: pol.Rule(i).Name, Outcome: NotSpent})
		}
	}
	if pass {
		setRateLimitHeaders(w.Header(), s.headers, s.legacy, -1)
	}
	if pass && set.Throttle != nil { // a refusal gives the leases back in their after step
		pass = l.admit(w, r, set.Throttle, pol, caller, name, addr, s)
	}
	l.report(r, rep, now)
	if pass && name != "" {
		r.Header[ClientHeader] = []string{name}
	}
	return r, pass
}

// unidentified answers a request whose key sluice cannot accept: 400 for a
// key header it cannot read one way only (err), else 401. Nothing is
// counted.
func (l *Limiter) unidentified(w http.ResponseWriter, r *http.Request, pol *policy.Compiled, rep *Report, now time.Time, err error) {
	rep.Client = UnknownClient
	if err != nil {
		l.badRequest(w, r, rep, now, err.Error())
		return
	}
	rep.Status = http.StatusUnauthorized
	l.report(r, rep, now)
	w.Header()["Www-Authenticate"] = []string{`ApiKey header="` + pol.KeyHeader() + `"`}
	writeProblem(w, problem{Title: "Unauthorized", Status: http.StatusUnauthorized,
		Detail: "missing or unknown access key in " + pol.KeyHeader()})
}

// badRequest answers 400 for a request sluice cannot count one way only.
// Nothing is counted.
func (l *Limiter) badRequest(w http.ResponseWriter, r *http.Request, rep *Report, now time.Time, detail string) {
	rep.Status = http.StatusBadRequest
	l.report(r, rep, now)
	writeProblem(w, problem{Title: "Bad Request", Status: http.StatusBadRequest, Detail: detail})
}

// requests builds one store request per matching rule that does not exempt
// the caller; exempt rules are reported at once, and so is a shadow rule
// that would refuse the request for a missing header (shadow_limited,
// nothing counted).
func (l *Limiter) requests(pol *policy.Compiled, caller *policy.Caller, addr netip.Addr, r *http.Request, s *scratch) {
	s.reqs, s.index, s.leaseIndex, s.leaseKeys = s.reqs[:0], s.index[:0], s.leaseIndex[:0], s.leaseKeys[:0]
	ip := ipGroup{pol: pol, addr: addr}
	for _, i := range s.match {
		rule := pol.Rule(i)
		if rule.Classifies() {
			continue // counts nothing: its priority and degrade are read by admit
		}
		if pol.Exempt(i, caller.ID, addr) {
			s.report.Rules = append(s.report.Rules, RuleResult{Rule: rule.Name, Outcome: Exempt})
			continue
		}
		if rule.Mode == policy.Shadow && rule.Key.Kind == policy.KeyHeader && rule.Key.Missing == policy.MissingReject {
			if _, missing := headerValue(pol, i, r.Header); missing {
				s.report.Rules = append(s.report.Rules, RuleResult{Rule: rule.Name, Outcome: ShadowLimited})
				continue
			}
		}
		if rule.LimitsInFlight() {
			s.leaseIndex, s.leaseKeys = append(s.leaseIndex, i), append(s.leaseKeys, stateKey(pol, caller, i, &ip, r))
			continue
		}
		s.reqs = append(s.reqs, store.Request{Key: stateKey(pol, caller, i, &ip, r), Limit: caller.Limit(i), Cost: rule.Cost,
			Shadow: rule.Mode != policy.Enforce})
		s.index = append(s.index, i)
	}
}

func enforcing(reqs []store.Request) int {
	n := 0
	for _, r := range reqs {
		if !r.Shadow {
			n++
		}
	}
	return n
}

func (l *Limiter) report(r *http.Request, rep *Report, start time.Time) {
	if l.opts.OnDecision != nil {
		rep.Latency = l.opts.Clock.Now().Sub(start) - rep.Held
		l.opts.OnDecision(r, rep)
	}
}

// storeFailed answers a request whose decision the store could not make,
// or lets it pass (fail open).
func (l *Limiter) storeFailed(w http.ResponseWriter, rep *Report, err error) bool {
	rep.Err = err
	var u *store.UnavailableError
	if !errors.As(err, &u) && !l.opts.OnFailure.Refuses() {
		return true
	}
	retry := time.Second
	if u != nil && u.RetryAfter > 0 {
		retry = u.RetryAfter
	}
	rep.Status, rep.RetryAfter = http.StatusServiceUnavailable, retry
	w.Header()["Retry-After"] = []string{itoa(retryAfterSeconds(retry))}
	writeProblem(w, problem{Title: "Service Unavailable", Status: http.StatusServiceUnavailable,
		Detail: "the rate limiter cannot count this request right now; retry later"})
	return false
}
