// Package httplimit is sluice's decision as net/http middleware: it
// identifies the caller (access key, or IP behind trusted proxies), finds the
// rules that match the request, asks the store for one decision per rule
// (one batch, one clock read), and either passes the request on with
// RateLimit headers or answers 429 itself, with Retry-After and a problem
// detail, without touching the handler behind it. The gateway is built on
// it; a Go program can put it in front of any handler.
package httplimit

import (
	"errors"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// ClientHeader tells the protected handler who the caller is. A copy sent
// by the caller is always removed.
const ClientHeader = "X-Sluice-Client"

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
	// FailClosed answers 503 when the store cannot decide. Default false:
	// the request passes (fail open). A store may also return an error
	// carrying a Retry-After (see Unavailable) to ask for a 503 itself.
	FailClosed bool
	// OnDecision, if set, is called once per request after the decision,
	// before the handler runs (metrics, logs). The Report and its slices
	// are valid only during the call.
	OnDecision func(*http.Request, *Report)
}

// Limiter is the middleware. It is safe for concurrent use.
type Limiter struct {
	opts    Options
	policy  atomic.Pointer[policy.Compiled]
	scratch sync.Pool
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
	l := &Limiter{opts: opts}
	l.policy.Store(opts.Policy)
	l.scratch.New = func() any { return new(scratch) }
	return l, nil
}

// SetPolicy replaces the policy for the requests that start after it.
func (l *Limiter) SetPolicy(p *policy.Compiled) { l.policy.Store(p) }

// Policy returns the policy in force.
func (l *Limiter) Policy() *policy.Compiled { return l.policy.Load() }

// Handler returns next behind the limiter.
func (l *Limiter) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.decide(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

// scratch is the per-request working memory, pooled.
type scratch struct {
	match   []int
	reqs    []store.Request
	index   []int // rule index of each request
	headers []ruleHeader
	report  Report
}

// decide answers the request itself (false) or prepares it to pass (true).
func (l *Limiter) decide(w http.ResponseWriter, r *http.Request) bool {
	pol := l.policy.Load()
	now := l.opts.Clock.Now()
	r.Header.Del(ClientHeader)
	caller := identify(pol, r)
	s := l.scratch.Get().(*scratch)
	defer l.scratch.Put(s)
	rep := &s.report
	*rep = Report{Rules: rep.Rules[:0]}
	if caller == nil {
		rep.Client, rep.Status = UnknownClient, http.StatusUnauthorized
		l.report(r, rep, now)
		writeProblem(w, problem{Title: "Unauthorized", Status: http.StatusUnauthorized,
			Detail: "missing or unknown access key in " + pol.KeyHeader()})
		return false
	}
	rep.Client = clientLabel(pol, caller)
	addr := clientAddr(pol, r)
	s.match = pol.Match(r.Method, r.URL.Path, s.match[:0])
	l.requests(pol, caller, addr, r, s)
	var results []store.Result
	var err error
	if len(s.reqs) > 0 {
		results, err = l.opts.Store.DecideBatch(r.Context(), s.reqs, now)
	}
	pass := l.judge(w, pol, caller, addr, s, results, err)
	l.report(r, rep, now)
	if pass && caller.ID != "" {
		r.Header[ClientHeader] = []string{caller.ID}
	} else if pass && caller == pol.Anonymous() {
		r.Header[ClientHeader] = []string{policy.AnonymousPlan}
	}
	return pass
}

// requests builds one store request per matching rule that does not exempt
// the caller; exempt rules are reported at once.
func (l *Limiter) requests(pol *policy.Compiled, caller *policy.Caller, addr netip.Addr, r *http.Request, s *scratch) {
	s.reqs, s.index = s.reqs[:0], s.index[:0]
	for _, i := range s.match {
		rule := pol.Rule(i)
		if pol.Exempt(i, caller.ID, addr) {
			s.report.Rules = append(s.report.Rules, RuleResult{Rule: rule.Name, Outcome: Exempt})
			continue
		}
		s.reqs = append(s.reqs, store.Request{Key: stateKey(pol, caller, i, addr, r), Limit: caller.Limit(i), Cost: rule.Cost})
		s.index = append(s.index, i)
	}
}

// stateKey is the store key of rule i for this request: the rule, its limit,
// and what the rule counts by.
func stateKey(pol *policy.Compiled, caller *policy.Caller, i int, addr netip.Addr, r *http.Request) string {
	rule := pol.Rule(i)
	tag := caller.StateTag(i)
	switch rule.Key.Kind {
	case policy.KeyClient:
		if caller.ID != "" {
			return store.Key(rule.Name, tag, "client", caller.ID)
		}
		return store.Key(rule.Name, tag, "ip", pol.IPKey(addr))
	case policy.KeyIP:
		return store.Key(rule.Name, tag, "ip", pol.IPKey(addr))
	case policy.KeyHeader:
		// Every request without the header shares one counter, so leaving
		// it out is no way around the limit.
		return store.Key(rule.Name, tag, "header", r.Header.Get(rule.Key.Header))
	default:
		return store.Key(rule.Name, tag, "global")
	}
}

func (l *Limiter) report(r *http.Request, rep *Report, start time.Time) {
	if l.opts.OnDecision != nil {
		rep.Latency = l.opts.Clock.Now().Sub(start)
		l.opts.OnDecision(r, rep)
	}
}

// Unavailable is the error a store returns to have the request answered
// 503 with a Retry-After (failure policy "closed").
type Unavailable struct {
	RetryAfter time.Duration
	Err        error
}

func (e *Unavailable) Error() string { return "store unavailable: " + e.Err.Error() }
func (e *Unavailable) Unwrap() error { return e.Err }

// storeFailed answers a request whose decision the store could not make,
// or lets it pass (fail open).
func (l *Limiter) storeFailed(w http.ResponseWriter, rep *Report, err error) bool {
	rep.Err = err
	var u *Unavailable
	if !errors.As(err, &u) && !l.opts.FailClosed {
		return true
	}
	retry := time.Second
	if u != nil && u.RetryAfter > 0 {
		retry = u.RetryAfter
	}
	rep.Status = http.StatusServiceUnavailable
	w.Header()["Retry-After"] = []string{itoa(retryAfterSeconds(retry))}
	writeProblem(w, problem{Title: "Service Unavailable", Status: http.StatusServiceUnavailable,
		Detail: "the rate limiter cannot reach its shared counters; retry later"})
	return false
}
