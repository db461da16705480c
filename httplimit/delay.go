package httplimit

import (
	"context"
	"errors"
	"net/http"
	"time"

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
func (l *Limiter) hold(w http.ResponseWriter, r *http.Request, s *scratch, results []store.Result, now time.Time) bool {
	var turn time.Duration
	for k, res := range results {
		if !s.reqs[k].Shadow && res.Err == nil && res.Decision.Allowed {
			turn = max(turn, res.Decision.Delay)
		}
	}
	if turn == 0 {
		return true
	}
	start := l.opts.Clock.Now()
	wait := turn - start.Sub(now)
	if wait <= 0 { // deciding took as long
		return true
	}
	// A ticker used once is the clock's timer: it starts no goroutine.
	tick := l.opts.Clock.NewTicker(wait)
	defer tick.Stop()
	select {
	case <-tick.C():
		s.report.Held = l.opts.Clock.Now().Sub(start)
		return true
	case <-r.Context().Done():
	}
	s.report.Held = l.opts.Clock.Now().Sub(start)
	l.cancelHeld(r.Context(), s, results)
	if errors.Is(context.Cause(r.Context()), context.Canceled) {
		s.report.Status = StatusClientGone // net/http's cause when the caller leaves: nobody reads an answer
		return false
	}
	left := max(wait-s.report.Held, time.Second)
	s.report.Status, s.report.RetryAfter = http.StatusServiceUnavailable, left
	w.Header()["Retry-After"] = []string{itoa(retryAfterSeconds(left))}
	writeProblem(w, problem{Title: "Service Unavailable", Status: http.StatusServiceUnavailable,
		Detail: "the request was cancelled while it waited for its turn (the server is shutting down, or a deadline passed); retry in " +
			itoa(retryAfterSeconds(left)) + "s"})
	return false
}

// cancelHeld gives back the reservations of a request that will not go on
// (its caller left while held), every rule's that reserved one. Those are
// not settled after: a settle's refund of a reservation cancelled would
// give back whatever request took the same turn in between.
func (l *Limiter) cancelHeld(ctx context.Context, s *scratch, results []store.Result) {
	c, ok := l.opts.Store.(store.Canceler)
	if !ok {
		return // the settle step refunds what it can
	}
	items := s.settle.items[:0]
	for _, it := range s.settle.items {
		if !it.held {
			items = append(items, it)
		}
	}
	clear(s.settle.items[len(items):])
	s.settle.items = items
	ctx = context.WithoutCancel(ctx) // the caller's has ended; the store bounds its own calls
	for k, res := range results {
		if d := res.Decision; res.Err == nil && d.Allowed && d.Delay > 0 {
			_, _ = c.Cancel(ctx, s.reqs[k].Key, s.reqs[k].Limit, d.Reservation, s.reqs[k].Cost)
		}
	}
}

// spendHeld is decideAll's spending, when no rule without a delay blocks
// the request but rules with a delay (s.held) have no room now: only their
// cost tells whether they hold the request or refuse it, so they are
// decided first. If one that enforces refuses, the others spend nothing
// (their reservations are given back where the store can, while still
// their keys' last) and report the looks; otherwise the rest are decided
// with their cost, as one batch. looks are the rules' looks (cost 0).
func (l *Limiter) spendHeld(ctx context.Context, s *scratch, looks []store.Result, now time.Time) ([]store.Result, bool, error) {
	s.again = s.again[:0]
	for _, k := range s.held {
		s.again = append(s.again, s.reqs[k])
	}
	first, err := l.opts.Store.DecideBatch(ctx, s.again, now)
	if err != nil || len(first) != len(s.again) {
		return first, false, err
	}
	refused := false
	for j, k := range s.held {
		refused = refused || first[j].Err == nil && !first[j].Decision.Allowed && !s.reqs[k].Shadow
	}
	if refused {
		c, _ := l.opts.Store.(store.Canceler)
		for j, k := range s.held {
			switch d := first[j].Decision; {
			case first[j].Err != nil || !d.Allowed:
				looks[k] = first[j] // the denial, for its Retry-After
			case d.Delay > 0 && c != nil:
				_, _ = c.Cancel(context.WithoutCancel(ctx), s.reqs[k].Key, s.reqs[k].Limit, d.Reservation, s.reqs[k].Cost)
			}
		}
		return looks, false, nil
	}
	s.again = s.again[:0]
	for k := range s.reqs {
		if !contains(s.held, k) {
			s.again = append(s.again, s.reqs[k])
		}
	}
	rest, err := l.opts.Store.DecideBatch(ctx, s.again, now)
	if err != nil || len(rest) != len(s.again) {
		return rest, false, err
	}
	res := make([]store.Result, len(s.reqs))
	j, h := 0, 0
	for k := range s.reqs {
		if h < len(s.held) && s.held[h] == k {
			res[k], h = first[h], h+1
		} else {
			res[k], j = rest[j], j+1
		}
	}
	return res, true, nil
}

func contains(ks []int, k int) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}
