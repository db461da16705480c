package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// reference is the reference store: limiter.Decide behind one mutex; for
// tests. It keeps every key forever, with the limit its state was written
// under.
type reference struct {
	mu     sync.Mutex
	states map[string]kept
	closed bool
}

// kept is a key's state and the limit it was written under.
type kept struct {
	state limiter.State
	limit limiter.Limit
}

var _ store.Store = (*reference)(nil)

// NewReference returns the reference store: limiter.Decide behind one
// mutex; for tests. It is not bounded (it forgets no key) and starts no
// goroutine. It is safe for concurrent use.
func NewReference() store.Store { return &reference{states: map[string]kept{}} }

// Decide decides one request with limiter.Decide under the store's mutex.
func (r *reference) Decide(ctx context.Context, key store.Key, l limiter.Limit, now time.Time, cost int64) (limiter.Decision, error) {
	if err := ctx.Err(); err != nil {
		return limiter.Decision{}, fmt.Errorf("reference store: decide: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return limiter.Decision{}, store.ErrClosed
	}
	return r.decide(key.String(), l, now, cost), nil
}

// decide runs the algorithm and keeps the new state; r.mu is held. A
// state written under another limit is first reinterpreted under l, and
// kept so even when the request is denied.
func (r *reference) decide(key string, l limiter.Limit, now time.Time, cost int64) limiter.Decision {
	k, ok := r.states[key]
	if ok && !k.limit.Same(&l) {
		k.state = limiter.Reinterpret(k.limit, l, k.state, now)
	}
	d, s := limiter.Decide(l, k.state, now, cost)
	r.states[key] = kept{s, l}
	return d
}

// DecideEach decides the requests in order, under one lock.
func (r *reference) DecideEach(ctx context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	if err := ctx.Err(); err != nil {
		return dst, fmt.Errorf("reference store: decide each: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return dst, store.ErrClosed
	}
	for _, q := range reqs {
		dst = append(dst, store.Result{Decision: r.decide(q.Key.String(), q.Limit, now, q.Cost)})
	}
	return dst, nil
}

// Close forgets every key; later calls return store.ErrClosed.
func (r *reference) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return store.ErrClosed
	}
	r.closed, r.states = true, nil
	return nil
}

var _ store.Settler = (*reference)(nil)

// Settle settles with limiter.Settle under the store's mutex. A key held
// under another limit (limiter.Limit.Same: not merely another delay), or
// not held, is left as it is: the decision is a look at it.
func (r *reference) Settle(ctx context.Context, key store.Key, l limiter.Limit, now time.Time, res limiter.Reservation, reserved, actual int64) (limiter.Decision, error) {
	if err := ctx.Err(); err != nil {
		return limiter.Decision{}, fmt.Errorf("reference store: settle: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return limiter.Decision{}, store.ErrClosed
	}
	k, ok := r.states[key.String()]
	if ok && k.limit.Algorithm() == limiter.SlidingLog && l.Algorithm() == limiter.SlidingLog {
		k.limit = l // a log's entries stand under any limit
	}
	if ok && k.limit.Same(&l) { // a changed delay is not a changed limit
		var d limiter.Decision
		k.state, d = limiter.Settle(l, k.state, now, res, reserved, actual)
		r.states[key.String()] = k
		return d, nil
	}
	if ok {
		k.state = limiter.Reinterpret(k.limit, l, limiter.State{A: k.state.A, B: k.state.B, Log: slices.Clone(k.state.Log)}, now)
	}
	_, d := limiter.Settle(l, k.state, now, res, 0, 0)
	return d, nil
}

var _ store.Canceler = (*reference)(nil)

// Cancel gives a held request's reservation back with limiter's Cancel,
// if the key's state is still under the same limit.
func (r *reference) Cancel(ctx context.Context, key store.Key, l limiter.Limit, res limiter.Reservation, cost int64) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("reference store: cancel: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false, store.ErrClosed
	}
	k, ok := r.states[key.String()]
	if !ok || !k.limit.Same(&l) || !l.Cancel(&k.state, res, cost) {
		return false, nil
	}
	r.states[key.String()] = k
	return true, nil
}

// DecideAll decides the requests in turn on copies of their keys' states,
// under one lock, each seeing the requests before it. If every request
// not marked Shadow is allowed, the copies are kept; otherwise nothing
// changes, the denied requests answer their denial and the others a look
// (cost 0) at their key as it stands.
func (r *reference) DecideAll(ctx context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	if err := ctx.Err(); err != nil {
		return dst, fmt.Errorf("reference store: decide all: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return dst, store.ErrClosed
	}
	copies := make(map[string]kept, len(reqs))
	res := make([]store.Result, len(reqs))
	pass := true
	for i, q := range reqs {
		key := q.Key.String()
		k, ok := copies[key]
		if !ok {
			k, ok = r.states[key]
			k.state.Log = slices.Clone(k.state.Log) // Decide reuses a log's array
		}
		if ok && !k.limit.Same(&q.Limit) {
			k.state = limiter.Reinterpret(k.limit, q.Limit, k.state, now)
		}
		res[i].Decision, k.state = limiter.Decide(q.Limit, k.state, now, q.Cost)
		k.limit = q.Limit
		copies[key] = k
		pass = pass && (q.Shadow || res[i].Decision.Allowed)
	}
	if pass {
		for key, k := range copies {
			r.states[key] = k
		}
		return append(dst, res...), nil
	}
	for i, q := range reqs {
		if res[i].Decision.Allowed {
			res[i].Decision = r.look(q.Key.String(), q.Limit, now)
		}
	}
	return append(dst, res...), nil
}

// look is a decision of cost 0 on key under l that keeps nothing; r.mu is
// held.
func (r *reference) look(key string, l limiter.Limit, now time.Time) limiter.Decision {
	k, ok := r.states[key]
	st := limiter.State{A: k.state.A, B: k.state.B, Log: slices.Clone(k.state.Log)}
	if ok && !k.limit.Same(&l) {
		st = limiter.Reinterpret(k.limit, l, st, now)
	}
	d, _ := limiter.Decide(l, st, now, 0)
	return d
}
