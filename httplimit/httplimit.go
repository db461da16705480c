// Package httplimit is sluice's decision as net/http middleware: it
// identifies the caller (access key, a client certificate the server's TLS
// handshake verified when the policy's clients list certificates
// (policy.Client.Certs), or IP behind trusted proxies), finds the
// rules that match the request, asks the store for one decision per rule
// (one batch, one clock read), and either passes the request on with
// RateLimit headers or answers 429 itself, with Retry-After and a problem
// detail, without touching the handler behind it. Concurrency rules
// (policy.Rule.Concurrency) are decided after the rate rules allowed the
// request: each takes a lease (Options.Leaser) that the request holds until
// its response ends. A Go program can put it in front of any handler.
//
// The decision itself is package decision's, shared with sluice's other
// fronts; httplimit is its net/http adapter: it hands the Engine the
// request's method, path, peer and header fields, writes the Verdict, and
// tells the Engine the response once the handler is done.
package httplimit

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
	"github.com/sluice-rl/sluice/throttle"
)

// ClientHeader tells the protected handler who the caller is. A copy sent
// by the caller is always removed, in every spelling. A proxy behind the
// Limiter must set it on its outgoing request after removing hop-by-hop
// headers, as the gateway does: a caller may name it in Connection. The
// same holds for the access key header and the headers header:NAME rules
// count by, which the upstream must receive as they were counted.
const ClientHeader = policy.ClientHeader

// Options configure a Limiter. Policy is required.
type Options struct {
	// Policy is the compiled policy; SetPolicy replaces it later.
	Policy *policy.Compiled
	// Store keeps the counters. Nil means a memory store of the Limiter's
	// own (memory.New on Clock, with room always kept for the clients the
	// policy lists: store.Key.Listed), which Close closes; a store given here is
	// the caller's to close.
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
	// Key, if set, gives the key each rule counts a request by, in place
	// of the rule's own (client, ip, header:NAME, global): see KeyFunc.
	// Default nil: every rule counts by its own key.
	Key KeyFunc
	// Skip, if set, lets the requests it returns true for go to the
	// handler undecided: nothing counted, no RateLimit headers, no
	// OnDecision or OnResponse (health checks, a trusted internal caller).
	// They still lose a caller-sent X-Sluice-Client and the
	// method-override headers. Default nil: every request is decided.
	Skip func(r *http.Request) bool
	// Reject, if set, writes the Limiter's refusals (429, 401, 400, 503;
	// Refusal.Status says which) in place of its problem+json body: its
	// own status and body. The response's header already holds the
	// RateLimit fields, Retry-After and Cache-Control: no-store; a Reject
	// that writes nothing answers the Limiter's status with an empty body.
	// A caller that went away (StatusClientGone) is answered nothing, as
	// ever. Default nil: the problem+json body.
	Reject func(w http.ResponseWriter, r *http.Request, ref *Refusal)
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
	engine   *decision.Engine
	settings atomic.Pointer[Settings]
	setMu    sync.Mutex // serialises SetPolicy and SetLegacyHeaders
	records  sync.Pool  // of *record
	ownStore bool       // Store was made by New: Close closes it
}

// New returns a Limiter for opts.
func New(opts Options) (*Limiter, error) {
	if opts.Policy == nil {
		return nil, errors.New("httplimit: no policy")
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	own := opts.Store == nil
	if own {
		opts.Store = memory.New(memory.Options{Clock: opts.Clock})
	}
	if opts.FailClosed && opts.OnFailure == store.FailOpen {
		opts.OnFailure = store.FailClosed
	}
	eopts := decision.Options{Store: opts.Store, Clock: opts.Clock, OnFailure: opts.OnFailure, Leaser: opts.Leaser, LeaseTTL: opts.LeaseTTL}
	if onSettle := opts.OnSettle; onSettle != nil {
		eopts.OnSettle = func(req *decision.Request, rule string, err error) {
			onSettle(req.Origin.(*http.Request), rule, err)
		}
	}
	engine, err := decision.New(eopts) // it defaults Leaser to Store and checks LeaseTTL
	if err == nil {
		err = engine.CanDecide(opts.Policy)
	}
	if err != nil {
		if own {
			opts.Store.Close()
		}
		return nil, fmt.Errorf("httplimit: %w", err)
	}
	l := &Limiter{opts: opts, engine: engine, ownStore: own}
	l.settings.Store(&Settings{Policy: opts.Policy, LegacyHeaders: opts.LegacyHeaders, Throttle: opts.Throttle})
	l.records.New = func() any { return new(record) }
	return l, nil
}

// Close closes the Limiter's own memory store, if New made one (Options.Store
// nil); a Store given in Options is left open. Requests decided after Close
// get the store's error, answered by OnFailure.
func (l *Limiter) Close() error {
	if l.ownStore {
		return l.opts.Store.Close()
	}
	return nil
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
