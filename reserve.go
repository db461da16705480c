package sluice

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// ErrDeadline is Wait's answer, at once, when the request's turn comes
// after its context's deadline: waiting could not end in an allowed
// request.
var ErrDeadline = errors.New("sluice: the wait would end after the context's deadline")

// ErrNever is Wait's answer for a cost the limit can never allow (more
// than its burst, a negative cost, or the zero Limit).
var ErrNever = errors.New("sluice: the limit can never allow the cost")

// Reservation is a request's turn, granted by Reserve: its cost is already
// counted, and the request should go on after Delay. A Reservation is not
// for concurrent use.
type Reservation struct {
	lim      *Limiter
	key      store.Key // the store key
	limit    limiter.Limit
	cost     int64
	decision limiter.Decision
	decided  time.Time // on the limiter's clock
	done     bool      // cancelled, or nothing to cancel
}

// OK reports whether the request was granted a turn. When it was not, it
// spent nothing, and Decision().RetryAfter says when asking again could
// succeed.
func (r *Reservation) OK() bool { return r.decision.Allowed }

// Delay is how long from now the request must wait for its turn: 0 when
// it may go on at once. It is limiter.Never for a request not granted.
func (r *Reservation) Delay() time.Duration {
	if !r.OK() {
		return limiter.Never
	}
	return max(r.decision.Delay-r.lim.opts.Clock.Now().Sub(r.decided), 0)
}

// Decision is the store's decision on the request, its durations counted
// from the moment it was decided.
func (r *Reservation) Decision() limiter.Decision { return r.decision }

// Cancel gives the reservation's cost back, for a request that will not go
// on after all, where the store can (store.Canceler, a bucket algorithm):
// only before its turn has come (after it, the request may have gone on,
// and nothing is given back, as with golang.org/x/time/rate), and only
// while no later request has been given a turn behind it, as
// limiter.Limit.Cancel explains; otherwise its turn goes unused. A
// reservation is cancelled at most once: later calls do nothing. An error
// means the store could not be asked.
func (r *Reservation) Cancel(ctx context.Context) error {
	if r.done || !r.OK() {
		return nil
	}
	r.done = true
	if r.lim.opts.Clock.Now().Sub(r.decided) > r.decision.Delay { // the turn has passed
		return nil
	}
	c, ok := r.lim.opts.Store.(store.Canceler)
	if !ok {
		return nil
	}
	_, err := c.Cancel(ctx, r.key, r.limit, r.decision.Reservation, r.cost)
	return err
}

// Reserve is ReserveN(ctx, key, 1).
func (l *Limiter) Reserve(ctx context.Context, key string) (*Reservation, error) {
	return l.ReserveN(ctx, key, 1)
}

// ReserveN asks for a turn for a request of cost n on key. Under a bucket
// algorithm the request is granted a turn up to the limit's delay ahead
// (limiter.MaxDelay when it has none, see New), its cost counted at once,
// so that later requests queue behind it; under a window algorithm it is
// granted only if it may go on now. An error means the store could not
// decide.
func (l *Limiter) ReserveN(ctx context.Context, key string, n int64) (*Reservation, error) {
	return l.reserve(ctx, key, n, l.limitsFor(key).hold)
}

func (l *Limiter) reserve(ctx context.Context, key string, n int64, limit limiter.Limit) (*Reservation, error) {
	d, err := l.decide(ctx, key, limit, n)
	if err != nil {
		return nil, err
	}
	// Delay counts from the store's now, somewhere in the call: counting it
	// from the call's end may wait a round trip too long, never too short.
	return &Reservation{lim: l, key: l.key(key), limit: limit, cost: n, decision: d, decided: l.now()}, nil
}

// now is the time on the limiter's clock; the zero time for the zero
// Limiter, which has none (it grants nothing, so a time it would count a
// turn from is never read).
func (l *Limiter) now() time.Time {
	if l.opts.Clock == nil {
		return time.Time{}
	}
	return l.opts.Clock.Now()
}

// Wait is WaitN(ctx, key, 1).
func (l *Limiter) Wait(ctx context.Context, key string) error { return l.WaitN(ctx, key, 1) }

// WaitN blocks until a request of cost n on key is allowed, and counts it;
// or until ctx ends, returning its error (a turn it held is then given back
// where the store can, see Reservation.Cancel). When ctx has a deadline
// and the request's turn comes after it, WaitN returns ErrDeadline at once,
// without waiting; a cost the limit can never allow returns ErrNever. An
// error from the store is returned as it is.
func (l *Limiter) WaitN(ctx context.Context, key string, n int64) error {
	for {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		budget, bounded := l.budget(ctx)
		ls := l.limitsFor(key)
		r, err := l.reserve(ctx, key, n, ls.holdFor(budget, bounded))
		if err != nil {
			return err
		}
		if !r.OK() {
			// A denial under a limit that holds requests up to its delay
			// comes when even that is too short: the turn is RetryAfter
			// (when a place in the queue frees) plus the delay.
			after := r.decision.RetryAfter
			if after == limiter.Never {
				if n < 0 {
					return fmt.Errorf("%w: cost %d (a cost is 0 or more)", ErrNever, n)
				}
				return fmt.Errorf("%w: cost %d is more than %v allows at once", ErrNever, n, ls.limit)
			}
			if turn := after + r.limit.Delay(); bounded && turn > budget {
				return fmt.Errorf("%w (the turn is in %v, the deadline in %v)", ErrDeadline, turn, budget)
			}
			// A window algorithm, or a turn beyond the longest hold: wait
			// until then and ask again (another request may take it first).
			if err := l.sleep(ctx, after); err != nil {
				return err
			}
			continue
		}
		if err := l.sleep(ctx, r.Delay()); err != nil {
			_ = r.Cancel(context.WithoutCancel(ctx)) // ctx has ended; the store bounds its own calls
			return err
		}
		return nil
	}
}

// budget is how long ctx lets a request wait: until its deadline (in real
// time, as contexts keep it), or without bound.
func (l *Limiter) budget(ctx context.Context) (time.Duration, bool) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return time.Until(deadline), true
}

// holdFor is the limit that grants turns no further ahead than budget,
// when bounded, or the longest hold: a turn after the deadline is denied,
// costing nothing, rather than reserved and given back.
func (l *limits) holdFor(budget time.Duration, bounded bool) limiter.Limit {
	switch {
	case !bounded || budget >= l.hold.Delay():
		return l.hold
	case budget < time.Microsecond:
		return l.limit
	}
	if hold, err := l.limit.WithDelay(budget.Truncate(time.Microsecond)); err == nil {
		return hold
	}
	return l.limit
}
