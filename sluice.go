// Package sluice is sluice's keyed limiter for Go programs, with the verbs
// of golang.org/x/time/rate (Allow, AllowN, Wait, Reserve) over any store:
// a limit counted per key (a caller, a tenant, a partner's API), in this
// process (the memory store, the default) or shared by every instance in
// Redis (store/redis, or config/storeopen from a configuration's
// settings).
//
//	lim := sluice.New(limiter.MustNew(limiter.GCRA, 100, time.Minute, 20), sluice.Options{})
//	defer lim.Close()
//	if !lim.Allow(ctx, "partner-a") { /* over the limit */ }
//
// Time comes from the store where the store has a clock of its own: the
// Redis store decides on Redis TIME, so instances with skewed clocks agree,
// and every duration a decision carries (RetryAfter, Delay, Reset) is
// counted in that time from the moment of the decision. Options.Clock
// times the memory store's decisions and the waits of Wait.
//
// The algorithms, their guarantees and the store interface are in packages
// limiter and store; net/http middleware over whole policies (several
// rules, clients and plans) is package httplimit.
package sluice

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
)

// Options configure a Limiter. The zero value is ready to use: a memory
// store of its own, the real clock, failing open.
type Options struct {
	// Store keeps the counters. Nil means a memory store of the limiter's
	// own (memory.New with Clock), which Close closes; a store given here
	// is the caller's to close, and may be shared by several limiters of
	// different Names.
	Store store.Store
	// Name names the limit in the store: each key is counted under
	// store.NewKey(Name, key), so that limiters with different names on one
	// store never share a counter, and limiters with the same name and
	// limit on one Redis share theirs (one budget for a fleet). Default
	// "default".
	Name string
	// Clock gives the now of each decision, which the memory store decides
	// on (the Redis store uses Redis TIME instead), and times the waits of
	// Wait. A Store given here should keep time on the same clock. Default
	// clock.Real{}.
	Clock clock.Clock
	// OnFailure is what Allow and AllowN answer when the store cannot
	// decide (Redis unreachable): store.FailOpen (the default) allows,
	// store.FailClosed and store.FailLocal refuse. A store that asks for
	// refusals itself (a *store.UnavailableError: store/failover with
	// on_failure closed) is refused whatever OnFailure says. DecideN,
	// Reserve and Wait return the store's error instead.
	OnFailure store.FailurePolicy
	// OnError, if set, is called with each error that Allow and AllowN
	// answered by OnFailure, so that a program can log or count them.
	OnError func(error)
	// LimitFor, if set, gives a key a limit of its own in place of the one
	// New was given (a partner whose contract allows more, a key held to
	// less): ok false leaves New's. Every verb asks it, with the key as
	// the caller passed it, on every call, so it must be quick (a map read
	// under a lock, say). A key whose limit changes keeps its counter,
	// read under the new limit as store.Store's Decide does. Instances
	// sharing a Redis should give a key the same limit. Default nil: every
	// key has New's limit.
	LimitFor func(key string) (limiter.Limit, bool)
}

// Limiter limits each key to one limit, or to a limit of the key's own
// (Options.LimitFor). It is safe for concurrent use. The zero Limiter
// holds the zero Limit and no store: every method refuses (Allow and
// AllowOnError report false, DecideN and Peek deny for ever, Reserve
// grants no turn, Wait returns ErrNever, Reset ErrNoReset; Close does
// nothing), so a Limiter left unset fails closed rather than panicking.
// Use New for a limiter that allows anything.
type Limiter struct {
	opts     Options
	ownStore bool
	limits
}

// limits are one limit as the verbs use it.
type limits struct {
	limit limiter.Limit // without a delay: Allow, Decide
	hold  limiter.Limit // with the longest delay Reserve grants (bucket algorithms)
}

// limitsOf returns limit without its delay, for deciding, and with the
// delay Reserve and Wait hold a request up to: limit's own, or
// limiter.MaxDelay when it has none.
func limitsOf(limit limiter.Limit) limits {
	ls := limits{limit: limit, hold: limit}
	if limit.Algorithm().HasBurst() {
		ls.limit, _ = limit.WithDelay(0) // 0 is always accepted
		if limit.Delay() == 0 {
			if hold, err := limit.WithDelay(limiter.MaxDelay); err == nil {
				ls.hold = hold
			} // else a limit too fine to count an hour's queue exactly: no holding
		}
	}
	return ls
}

// limitsFor returns key's limits: Options.LimitFor's, or New's.
func (l *Limiter) limitsFor(key string) limits {
	if l.opts.LimitFor != nil {
		if limit, ok := l.opts.LimitFor(key); ok {
			return limitsOf(limit)
		}
	}
	return l.limits
}

// New returns a limiter of limit per key. Decisions are limit's without
// its delay; Reserve and Wait hold a request for its turn under a bucket
// algorithm (token_bucket, gcra, leaky_bucket) up to limit's delay, or up
// to limiter.MaxDelay when limit has none. The zero Limit allows nothing.
func New(limit limiter.Limit, opts Options) *Limiter {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Name == "" {
		opts.Name = "default"
	}
	l := &Limiter{opts: opts, limits: limitsOf(limit)}
	if l.opts.Store == nil {
		l.opts.Store, l.ownStore = memory.New(memory.Options{Clock: opts.Clock}), true
	}
	return l
}

// Close closes the limiter's own memory store, if it made one; a Store
// given in Options is left open.
func (l *Limiter) Close() error {
	if l.ownStore {
		return l.opts.Store.Close()
	}
	return nil
}

// Name returns the name the limiter counts its keys under in the store
// (Options.Name, "default" when it was empty).
func (l *Limiter) Name() string { return cmp.Or(l.opts.Name, "default") }

// Limit returns the limit each key is held to (without a delay), but for
// the keys Options.LimitFor gives one of their own (LimitOf).
func (l *Limiter) Limit() limiter.Limit { return l.limit }

// LimitOf returns the limit key is held to (without a delay): its own by
// Options.LimitFor, or Limit.
func (l *Limiter) LimitOf(key string) limiter.Limit { return l.limitsFor(key).limit }

// Allow reports whether one request on key may pass now, and counts it if
// so. It is AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) bool { return l.AllowN(ctx, key, 1) }

// AllowN reports whether a request of cost n on key may pass now, and
// counts it if so; a request refused counts nothing. When the store cannot
// decide it answers by Options.OnFailure (allowing, by default; refusing
// when the store says so with a *store.UnavailableError) and hands the
// error to Options.OnError.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) bool {
	d, err := l.DecideN(ctx, key, n)
	if err != nil {
		return l.AllowOnError(err)
	}
	return d.Allowed
}

// AllowOnError is what AllowN answers when the store could not decide
// and returned err: Options.OnFailure's answer, or a refusal whatever it
// says when err is a *store.UnavailableError or the Limiter is the zero
// one. It hands err to
// Options.OnError. A front that calls DecideN for the whole decision (the
// middleware of httplimit.PerKey) answers store failures with it, as Allow
// does.
func (l *Limiter) AllowOnError(err error) bool {
	if l.opts.OnError != nil {
		l.opts.OnError(err)
	}
	if l.opts.Store == nil { // the zero Limiter refuses
		return false
	}
	refused, _ := l.opts.OnFailure.Refused(err) // a *store.UnavailableError: the store's own policy, refuse
	return !refused
}

// DecideN decides a request of cost n on key now, counting it if it is
// allowed, and returns the whole decision: remaining quota, RetryAfter
// (from now, when denied), Reset. Over the limit is a decision, not an
// error; an error means the store could not decide.
func (l *Limiter) DecideN(ctx context.Context, key string, n int64) (limiter.Decision, error) {
	return l.decide(ctx, key, l.limitsFor(key).limit, n)
}

// Peek returns key's decision now without spending anything (a cost-0
// decision): Remaining, Reset and Refill as the next request would find
// them. Its Allowed is true but for a key whose limit allows nothing; an
// error means the store could not decide.
func (l *Limiter) Peek(ctx context.Context, key string) (limiter.Decision, error) {
	return l.decide(ctx, key, l.limitsFor(key).limit, 0)
}

// ErrNoReset is Reset's error for a store that cannot forget a key (one
// that is not a store.Resetter).
var ErrNoReset = errors.New("sluice: the store cannot reset a key (it is not a store.Resetter)")

// Reset forgets key's counter, so that its next request starts afresh with
// the whole limit, as an operator resets one caller. On Redis it does so
// for every instance that shares the counter. An error means the store
// could not be asked (the key may or may not have been reset), or
// ErrNoReset.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	r, ok := l.opts.Store.(store.Resetter)
	if !ok {
		return ErrNoReset
	}
	return r.Reset(ctx, l.key(key))
}

func (l *Limiter) decide(ctx context.Context, key string, limit limiter.Limit, n int64) (limiter.Decision, error) {
	if limit.IsZero() {
		return limiter.Decision{RetryAfter: limiter.Never}, nil
	}
	return l.opts.Store.Decide(ctx, l.key(key), limit, l.opts.Clock.Now(), n)
}

// key is the store key that counts key.
func (l *Limiter) key(key string) store.Key { return store.NewKey(l.opts.Name, key) }

// sleep waits d on the limiter's clock, or until ctx ends (its error).
func (l *Limiter) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	// A ticker used once is the clock's timer: it starts no goroutine.
	tick := l.opts.Clock.NewTicker(d)
	defer tick.Stop()
	select {
	case <-tick.C():
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
