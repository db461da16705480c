package decision

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/sluice-rl/sluice/internal/problem"
	"github.com/sluice-rl/sluice/store"
)

// hold holds a request that rules with a delay admitted for a later turn
// (limiter.Decision.Delay) until that turn: the longest Delay of its
// enforcing rules, counted from now, the time it was decided at. The time
// held is Report.Held. It waits on Options.Clock in the caller's
// goroutine. A request whose context ends meanwhile is let go at once and
// its reservations are given back where the store can (store.Canceler:
// only while each is its key's last): a caller that left is answered
// nothing (StatusClientGone), one whose wait the server cancelled (a
// gateway's drain ending, a deadline: its context's cause is not
// context.Canceled) 503 with the wait that was left as Retry-After. A
// shadow rule's Delay holds nothing.
func (e *Engine) hold(v *Verdict, results []store.Result, now time.Time) bool {
	var turn time.Duration
	for k, res := range results {
		if !v.reqs[k].Shadow && res.Err == nil && res.Decision.Allowed {
			turn = max(turn, res.Decision.Delay)
		}
	}
	if turn == 0 {
		return true
	}
	start := e.opts.Clock.Now()
	wait := turn - start.Sub(now)
	if wait <= 0 { // deciding took as long
		return true
	}
	// A ticker used once is the clock's timer: it starts no goroutine.
	tick := e.opts.Clock.NewTicker(wait)
	defer tick.Stop()
	select {
	case <-tick.C():
		v.Report.Held = e.opts.Clock.Now().Sub(start)
		return true
	case <-v.ctx.Done():
	}
	v.Report.Held = e.opts.Clock.Now().Sub(start)
	e.cancelHeld(v.ctx, v, results)
	if errors.Is(context.Cause(v.ctx), context.Canceled) {
		v.Report.Status = StatusClientGone // net/http's cause when the caller leaves: nobody reads an answer
		return false
	}
	left := max(wait-v.Report.Held, time.Second)
	v.Report.Status, v.Report.RetryAfter = statusUnavailable, left
	v.retryAfter(left)
	b := append(v.detail[:0], "the request was cancelled while it waited for its turn (the server is shutting down, or a deadline passed); retry in "...)
	v.detail = append(strconv.AppendInt(b, retryAfterSeconds(left), 10), 's')
	v.answer(problem.Problem{Title: "Service Unavailable", Status: statusUnavailable})
	return false
}

// cancelHeld gives back the reservations of a request that will not go on
// (its caller left while held), every rule's that reserved one. Those are
// not settled after: a settle's refund of a reservation cancelled would
// give back whatever request took the same turn in between.
func (e *Engine) cancelHeld(ctx context.Context, v *Verdict, results []store.Result) {
	c, ok := e.opts.Store.(store.Canceler)
	if !ok {
		return // the settle step refunds what it can
	}
	items := v.settle.items[:0]
	for _, it := range v.settle.items {
		if !it.held {
			items = append(items, it)
		}
	}
	clear(v.settle.items[len(items):])
	v.settle.items = items
	ctx = context.WithoutCancel(ctx) // the caller's has ended; the store bounds its own calls
	for k, res := range results {
		if d := res.Decision; res.Err == nil && d.Allowed && d.Delay > 0 {
			_, _ = c.Cancel(ctx, v.reqs[k].Key, v.reqs[k].Limit, d.Reservation, v.reqs[k].Cost)
		}
	}
}
