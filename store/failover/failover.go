// Package failover puts a shared store (Redis) behind the two things a
// distributed limiter needs to stay calm: cheap rejections and a defined
// behaviour when the shared store fails.
//
// Cheap rejections: once the shared store has said a key is denied a request
// of cost c until T, the same key's requests of the same cost (under the same
// limit) are denied locally until T without asking it again. This never admits more than the
// shared store would: a denial changes no state, and anything else that
// happens meanwhile (other instances admitting requests) can only push T
// later. A client hammering a limited key with immediate retries never
// reaches Redis; under several rules (DecideAll) the other rules' decisions
// are remembered with the denial for a second, so it reaches Redis once a
// second at most. A shared store that tells each instance of the resets
// made on any (a store.ResetFeed: Redis) must be heard for rejections to
// be cached: until its subscription is made, and while it is lost, none
// is, so that a reset made elsewhere meanwhile cannot be outlived here.
//
// Failure: every shared decision has the shared store's own deadline. After
// Threshold consecutive failures the circuit opens: the shared store is not
// called, and requests are answered by the configured store.FailurePolicy
// (open: pass, closed: 503, local: each instance enforces limit/Instances
// from a memory store). Every ProbeInterval one request is let through as
// a probe; when it succeeds, shared counting resumes.
package failover

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// Options configure a Store. Shared and, for Local, Fallback are required.
type Options struct {
	// Shared is the shared store (Redis).
	Shared store.Store
	// Fallback decides while Shared is down, with store.FailLocal.
	Fallback store.Store
	// OnFailure is the failure policy: store.FailOpen (the default)
	// returns the shared store's error, so that the caller lets the request
	// pass; store.FailClosed returns *store.UnavailableError (503 with
	// Retry-After); store.FailLocal decides with Fallback at
	// limit/Instances.
	OnFailure store.FailurePolicy
	// Instances divides each limit with store.FailLocal. Default 1.
	Instances int
	// Threshold is how many consecutive failures open the circuit. Default 3.
	Threshold int
	// ProbeInterval is how often a request probes an open circuit. Default 500ms.
	ProbeInterval time.Duration
	// RetryAfter is the Retry-After of store.FailClosed's 503. Default 1s.
	RetryAfter time.Duration
	// Clock is the local clock for cached rejections and probes. Default clock.Real{}.
	Clock clock.Clock
	// MaxCached bounds the cached rejections (spread over 64 shards, at
	// least one each). Default 100000.
	MaxCached int
	// StartDegraded starts with the circuit open, as when the shared store
	// could not be reached at start; the first probe may go at once.
	StartDegraded bool
	// OnStateChange, if set, is called when the store turns degraded
	// (true) or back to shared (false).
	OnStateChange func(degraded bool)
	// BackgroundProbe makes the store probe an open circuit by itself every
	// ProbeInterval (on Clock), so that an instance nobody calls returns to
	// shared counting too; Close stops it. Without it, requests and Probe
	// are the only probes.
	BackgroundProbe bool
}

// Store is a store.Store with cheap rejections and a failure policy.
type Store struct {
	opts      Options
	feed      store.ResetFeed // the shared store's resets; nil: it has none
	denied    *denials
	failures  atomic.Int32
	degraded  atomic.Bool
	nextProbe atomic.Int64 // unix nanos
	switched  atomic.Int64 // µs since the epoch of the last change of degraded, stored before it (circuit.go)
	scaled    sync.Map     // limiter.Limit -> limiter.Limit (limit / instances)
	stats     Stats

	stopProbes context.CancelFunc // ends the background prober; nil without one
	probesDone chan struct{}      // closed when the background prober has ended
}

var _ store.Store = (*Store)(nil)

// Stats counts what the store did; read with Snapshot.
type Stats struct {
	CachedRejections atomic.Int64 // answered locally from a cached denial
	SharedErrors     atomic.Int64 // shared store calls that failed
	Degraded         atomic.Int64 // decisions made by the failure policy
}

// New returns a Store for opts. A Shared store that is a store.ResetFeed
// (the Redis store) is watched from now on: a reset of a key by any
// instance (Reset) makes this one forget its cached rejection of the key
// and its local fallback's counter of it.
func New(opts Options) (*Store, error) {
	if opts.Shared == nil {
		return nil, errors.New("failover: no shared store")
	}
	if opts.OnFailure == store.FailLocal && opts.Fallback == nil {
		return nil, errors.New("failover: OnFailure store.FailLocal needs a Fallback store")
	}
	opts = withDefaults(opts)
	s := &Store{opts: opts, denied: newDenials(opts.MaxCached)}
	s.degraded.Store(opts.StartDegraded)
	if opts.StartDegraded {
		s.switched.Store(limiter.UnixMicro(opts.Clock.Now()))
	}
	if feed, ok := opts.Shared.(store.ResetFeed); ok {
		s.feed = feed
		feed.WatchResets(s.forget) // a reset on any instance: forget what this one keeps of the key
	}
	if opts.BackgroundProbe {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopProbes, s.probesDone = cancel, make(chan struct{})
		go s.probeLoop(ctx, opts.Clock.NewTicker(opts.ProbeInterval)) // ticking from now
	}
	return s, nil
}

func withDefaults(o Options) Options {
	if o.Instances < 1 {
		o.Instances = 1
	}
	if o.Threshold < 1 {
		o.Threshold = 3
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = 500 * time.Millisecond
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.MaxCached <= 0 {
		o.MaxCached = 100_000
	}
	return o
}

// State returns "shared" while decisions come from the shared store, and
// "degraded (open|closed|local)" while the failure policy decides.
func (s *Store) State() string {
	if s.degraded.Load() {
		return "degraded (" + s.opts.OnFailure.String() + ")"
	}
	return "shared"
}

// Shared returns the shared store (Options.Shared), for what a program
// asks of it beside decisions (the Redis store's instance heartbeat).
func (s *Store) Shared() store.Store { return s.opts.Shared }

// Degraded reports whether the failure policy is deciding.
func (s *Store) Degraded() bool { return s.degraded.Load() }

// Stats returns the store's counters.
func (s *Store) Stats() *Stats { return &s.stats }

// Decide decides one request; see DecideEach.
func (s *Store) Decide(ctx context.Context, key store.Key, l limiter.Limit, now time.Time, cost int64) (limiter.Decision, error) {
	res, err := s.decideEach(ctx, []store.Request{{Key: key, Limit: l, Cost: cost}}, now)
	if err != nil {
		return limiter.Decision{}, err
	}
	return res[0].Decision, res[0].Err
}

// DecideEach answers cached denials locally, sends the rest to the shared
// store in one batch, and applies the failure policy if it fails. It
// appends the results to dst (dst as given with an error).
func (s *Store) DecideEach(ctx context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	out, err := s.decideEach(ctx, reqs, now)
	if err != nil {
		return dst, err
	}
	if dst == nil {
		return out, nil
	}
	return append(dst, out...), nil
}

// decideEach is DecideEach returning results of its own.
func (s *Store) decideEach(ctx context.Context, reqs []store.Request, now time.Time) ([]store.Result, error) {
	local := s.opts.Clock.Now()
	var buf [8]int // a call carries a few requests: pending stays on the stack
	out, pending := s.answerCached(reqs, local, buf[:0])
	if len(pending) == 0 {
		return orNew(out, len(reqs)), nil
	}
	if !s.mayCallShared(local) {
		out = orNew(out, len(reqs))
		if s.answerHeld(reqs, pending, out, now) {
			return out, nil
		}
		return s.fail(ctx, reqs, pending, out, now, errCircuitOpen)
	}
	batch := reqs // the common case: no denial was remembered
	if len(pending) < len(reqs) {
		batch = make([]store.Request, len(pending))
		for k, i := range pending {
			batch[k] = reqs[i]
		}
	}
	res, err := s.opts.Shared.DecideEach(ctx, nil, batch, now)
	if err == nil && len(res) != len(batch) {
		err = fmt.Errorf("failover: shared store returned %d results for %d requests", len(res), len(batch))
	}
	if ctx.Err() != nil {
		// The caller left (or ran out of time) before the shared store
		// answered: nobody waits for a decision, and it says nothing
		// about the shared store's health.
		return nil, fmt.Errorf("failover: %w", ctx.Err())
	}
	if err != nil {
		s.failed()
		return s.fail(ctx, reqs, pending, orNew(out, len(reqs)), now, err)
	}
	if out == nil { // none answered locally: the batch was reqs, and res answers them in order
		out = res
	}
	failed, err := s.takeShared(reqs, pending, res, out, local)
	if len(failed) == 0 {
		s.succeeded()
		return out, nil
	}
	s.failed()
	return s.fail(ctx, reqs, failed, out, now, err)
}

// answerCached answers from remembered denials what it can and returns
// their results (nil when it answered none) and the indexes of the
// requests left for the shared store, appended to pending.
func (s *Store) answerCached(reqs []store.Request, now time.Time, pending []int) ([]store.Result, []int) {
	var out []store.Result
	caching := s.caching()
	for i, r := range reqs {
		if !caching {
			pending = append(pending, i)
			continue
		}
		if d, ok := s.denied.lookup(r.Key, r.Cost, r.Limit, now); ok {
			out = orNew(out, len(reqs))
			out[i].Decision = d
			if !d.Allowed { // a look is answered too, but rejects nothing
				s.stats.CachedRejections.Add(1)
			}
			continue
		}
		pending = append(pending, i)
	}
	return out, pending
}

// caching reports whether rejections may be cached and answered from the
// cache: always, but on a shared store with a reset feed (Redis) only
// while the feed hears resets. A rejection kept while a reset made on
// another instance cannot reach this one would outlive the reset, and the
// instance that reset would not know to wait for this one.
func (s *Store) caching() bool { return s.feed == nil || s.feed.Hearing() }

// orNew returns out, or n zero results if out is nil.
func orNew(out []store.Result, n int) []store.Result {
	if out == nil {
		out = make([]store.Result, n)
	}
	return out
}

// takeShared copies the shared store's answers into out, remembering its
// denials, and returns the requests it failed (a store that pipelines
// reports failures per request: a timeout, a lost connection) with the
// last of their errors.
func (s *Store) takeShared(reqs []store.Request, pending []int, res []store.Result, out []store.Result, now time.Time) ([]int, error) {
	var failed []int
	var err error
	for k, i := range pending {
		if res[k].Err != nil {
			failed, err = append(failed, i), res[k].Err
			continue
		}
		out[i] = res[k]
		if d := res[k].Decision; !d.Allowed && d.RetryAfter > 0 && s.caching() {
			s.denied.remember(reqs[i].Key, reqs[i].Cost, reqs[i].Limit, d, now)
		}
	}
	return failed, err
}

// answerHeld answers the pending requests from the quota the shared store
// holds here (store.Holder: the Redis store's grants), all of them or
// none, and reports whether it did.
func (s *Store) answerHeld(reqs []store.Request, pending []int, out []store.Result, now time.Time) bool {
	h, ok := s.opts.Shared.(store.Holder)
	if !ok {
		return false
	}
	batch := make([]store.Request, len(pending))
	for k, i := range pending {
		batch[k] = reqs[i]
	}
	res, ok := h.DecideHeld(batch, now)
	if !ok {
		return false
	}
	for k, i := range pending {
		out[i] = res[k]
	}
	return true
}

var errCircuitOpen = errors.New("failover: shared store unreachable (circuit open)")

// fail answers the pending requests by the failure policy.
func (s *Store) fail(ctx context.Context, reqs []store.Request, pending []int, out []store.Result, now time.Time, cause error) ([]store.Result, error) {
	s.stats.Degraded.Add(int64(len(pending)))
	if s.opts.OnFailure != store.FailLocal {
		return nil, s.opts.OnFailure.Unavailable(cause, s.opts.RetryAfter)
	}
	batch := make([]store.Request, len(pending))
	for k, i := range pending {
		batch[k] = reqs[i]
		batch[k].Limit = s.share(reqs[i].Limit)
	}
	res, err := s.opts.Fallback.DecideEach(ctx, nil, batch, now)
	if err != nil {
		return nil, fmt.Errorf("failover: local fallback: %w", err)
	}
	for k, i := range pending {
		out[i] = res[k]
	}
	return out, nil
}

// share returns this instance's share of l: rate and burst divided by the
// number of instances, at least 1, and the same delay.
func (s *Store) share(l limiter.Limit) limiter.Limit {
	if s.opts.Instances == 1 {
		return l
	}
	if v, ok := s.scaled.Load(l); ok {
		return v.(limiter.Limit)
	}
	n := int64(s.opts.Instances)
	burst := int64(0)
	if l.Algorithm().HasBurst() {
		burst = max(1, l.Burst()/n)
	}
	part, err := limiter.New(l.Algorithm(), max(1, l.Rate()/n), l.Period(), burst)
	if err == nil {
		part, err = part.WithDelay(l.Delay()) // requests are held for their turn locally too
	}
	if err != nil {
		part = l // cannot happen for a valid l; keep the whole limit rather than none
	}
	s.scaled.Store(l, part)
	return part
}

// DecideAll decides a request's rules all or nothing in the shared store.
// While degraded (but for a probe) and when the shared store fails, the
// failure policy answers: the local policy decides all or nothing on the
// fallback, with this instance's share of each limit.
// A request denied by the shared store is remembered with its other rules'
// decisions: the same request repeated before the denial runs out, and
// less than a second after the shared store last answered it, is answered
// from memory (a cached rejection), so that a caller hammering a limited
// path of several rules costs the shared store one call a second at most.
// A failure of the shared store counts towards the circuit.
func (s *Store) DecideAll(ctx context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	out, err := s.decideAll(ctx, reqs, now)
	if err != nil {
		return dst, err
	}
	return append(dst, out...), nil
}

// decideAll is DecideAll returning results of its own.
func (s *Store) decideAll(ctx context.Context, reqs []store.Request, now time.Time) ([]store.Result, error) {
	local := s.opts.Clock.Now()
	if s.caching() {
		if out, ok := s.denied.replay(reqs, local); ok {
			s.stats.CachedRejections.Add(1)
			return out, nil
		}
	}
	if !s.mayCallShared(local) {
		if h, ok := s.opts.Shared.(store.Holder); ok {
			if out, ok := h.DecideHeld(reqs, now); ok {
				return out, nil
			}
		}
		return s.failAll(ctx, reqs, now, errCircuitOpen)
	}
	res, err := s.opts.Shared.DecideAll(ctx, nil, reqs, now)
	if err == nil && len(res) != len(reqs) {
		err = fmt.Errorf("failover: shared store returned %d results for %d requests", len(res), len(reqs))
	}
	if ctx.Err() != nil { // the caller left: see DecideEach
		return nil, fmt.Errorf("failover: %w", ctx.Err())
	}
	if err != nil {
		s.failed()
		return s.failAll(ctx, reqs, now, err)
	}
	all := make([]int, len(reqs))
	for i := range all {
		all[i] = i
	}
	out := make([]store.Result, len(reqs))
	if failed, err := s.takeShared(reqs, all, res, out, local); len(failed) > 0 {
		s.failed()
		return s.fail(ctx, reqs, failed, out, now, err)
	}
	s.succeeded()
	s.rememberCompanions(reqs, out, local)
	return out, nil
}

// failAll answers every request of a DecideAll by the failure policy, all
// or nothing on the fallback where it can (see DecideAll).
func (s *Store) failAll(ctx context.Context, reqs []store.Request, now time.Time, cause error) ([]store.Result, error) {
	if s.opts.OnFailure != store.FailLocal {
		pending := make([]int, len(reqs))
		for i := range pending {
			pending[i] = i
		}
		return s.fail(ctx, reqs, pending, make([]store.Result, len(reqs)), now, cause)
	}
	s.stats.Degraded.Add(int64(len(reqs)))
	batch := make([]store.Request, len(reqs))
	for i, r := range reqs {
		batch[i] = r
		batch[i].Limit = s.share(r.Limit)
	}
	res, err := s.opts.Fallback.DecideAll(ctx, nil, batch, now)
	if err != nil {
		return nil, fmt.Errorf("failover: local fallback: %w", err)
	}
	return res, nil
}

// rememberCompanions keeps, with each enforcing request's denial just
// remembered, the decisions of the request's other requests, so that the
// same request repeated soon is answered without the shared store.
func (s *Store) rememberCompanions(reqs []store.Request, out []store.Result, now time.Time) {
	if !s.caching() {
		return
	}
	for i, r := range reqs {
		if d := out[i].Decision; r.Shadow || d.Allowed || d.RetryAfter <= 0 {
			continue
		}
		others := make([]companion, 0, len(reqs)-1)
		for j, o := range reqs {
			if j != i {
				others = append(others, companion{key: o.Key, cost: o.Cost, limit: o.Limit, d: out[j].Decision})
			}
		}
		s.denied.attach(r.Key, now, others)
	}
}

var _ store.Bounded = (*Store)(nil)

// DecideBound is the shared store's bound, with the fallback's after it
// under store.FailLocal; false unless they have one (store.Bounded).
// Circuit and remembered denials answer without waiting.
func (s *Store) DecideBound() (time.Duration, bool) {
	b, ok := s.opts.Shared.(store.Bounded)
	if !ok {
		return 0, false
	}
	d, ok := b.DecideBound()
	if !ok || s.opts.OnFailure != store.FailLocal {
		return d, ok
	}
	f, ok := s.opts.Fallback.(store.Bounded)
	if !ok {
		return 0, false
	}
	fd, ok := f.DecideBound()
	return d + fd, ok
}
