package limiter_test

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// settleStep is one step of a settle table: a request (a reservation of
// its cost), or the settling of the request made at step of, at its
// actual cost.
type settleStep struct {
	at        time.Duration
	cost      int64 // a request of cost (a reservation), when of < 0
	of        int   // the step whose reservation is settled, or -1
	actual    int64
	remaining int64 // Remaining after the step (for a settle: a look's)
	allowed   bool  // for a request
}

func req(at time.Duration, cost, remaining int64, allowed bool) settleStep {
	return settleStep{at: at, cost: cost, of: -1, remaining: remaining, allowed: allowed}
}

func settled(at time.Duration, of int, actual, remaining int64) settleStep {
	return settleStep{at: at, of: of, actual: actual, remaining: remaining}
}

// TestSettle runs time-step tables of reservations and their settling: the
// arithmetic is in the comments. Base is aligned on every period used.
func TestSettle(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, ms := time.Second, time.Millisecond
	tables := []struct {
		name  string
		limit limiter.Limit
		steps []settleStep
	}{
		{"fixed_window/refund_same_window", limiter.MustNew(limiter.FixedWindow, 5, time.Minute, 0), []settleStep{
			req(0, 2, 3, true), req(s, 3, 0, true), req(2*s, 1, 0, false),
			settled(3*s, 0, 0, 2), // the first request refunded whole: count 5-2 = 3
			req(4*s, 2, 0, true),  // fits again
			settled(5*s, 1, 4, 0), // a charge of 1 stops at the rate: count 5, not 6
			req(6*s, 1, 0, false),
		}},
		{"fixed_window/refund_void_next_window", limiter.MustNew(limiter.FixedWindow, 5, time.Minute, 0), []settleStep{
			req(59*s, 5, 0, true), req(61*s, 5, 0, true),
			settled(62*s, 0, 0, 0), // the reservation's window has gone: void
			settled(62*s, 1, 2, 3), // the current window's: count 5-3 = 2
		}},
		{"sliding_window/refund_previous_counter", limiter.MustNew(limiter.SlidingWindow, 10, time.Minute, 0), []settleStep{
			req(30*s, 10, 0, true),
			// 90s: 30s into the next window, prev 10 weighs 10*30/60 = 5
			req(90*s, 5, 0, true),
			// the first request's 10 were in the previous window: prev 4
			// weighs floor(4*30/60) = 2, used 2+5 = 7, remaining 3
			settled(90*s, 0, 4, 3),
			settled(90*s, 1, 0, 8), // and curr 5 -> 0: used 2
			settled(150*s, 0, 0, 10),
		}},
		{"sliding_log/refund_entry", limiter.MustNew(limiter.SlidingLog, 3, time.Minute, 0), []settleStep{
			req(0, 1, 2, true), req(s, 2, 0, true),
			settled(2*s, 1, 0, 2), // the entry at 1s is removed
			req(3*s, 2, 0, true),
			settled(61*s, 0, 0, 1), // the entry at 0 has expired: void (the log holds 2 from 3s)
			settled(62*s, 3, 3, 0), // a charge of 1 on the entry at 3s: 3 used
		}},
		{"token_bucket/refund_while_last", limiter.MustNew(limiter.TokenBucket, 10, 10*s, 4), []settleStep{
			req(0, 4, 0, true),
			settled(500*ms, 0, 1, 3), // 3 tokens back at 0, and half a token refilled: 3
			req(s, 2, 2, true),       // 3+1 = 4 tokens at 1s, 2 left
			// the reservation at 0 is no longer the last change: void
			settled(s, 0, 0, 2),
			settled(s, 2, 0, 4), // the one at 1s is: 2 back, full
		}},
		{"token_bucket/refund_after_refill_is_void", limiter.MustNew(limiter.TokenBucket, 2, 2*s, 2), []settleStep{
			// The case a give-back would get wrong: the bucket refills
			// while the reservation is held, then another request spends
			// it; a refund now would admit 4 at once with a burst of 2.
			req(0, 2, 0, true), req(2*s, 2, 0, true),
			settled(2*s, 0, 0, 0),
			req(2*s, 1, 0, false),
		}},
		{"token_bucket/charge", limiter.MustNew(limiter.TokenBucket, 10, 10*s, 10), []settleStep{
			req(0, 1, 9, true),
			settled(0, 0, 4, 6),   // 3 more
			settled(0, 0, 100, 0), // far more: the bucket stops at empty
			req(s, 1, 0, true),    // one token refilled
		}},
		{"leaky_bucket/refund_and_charge", limiter.MustNew(limiter.LeakyBucket, 10, 10*s, 5), []settleStep{
			req(0, 5, 0, true),
			settled(0, 0, 2, 3), // level 5 -> 2
			req(0, 3, 0, true),
			settled(0, 2, 9, 0), // charge 6 at 0: level stops at 5
			req(s, 1, 0, true),  // one drained in 1s
		}},
		{"gcra/refund_and_charge", limiter.MustNew(limiter.GCRA, 10, 10*s, 5), []settleStep{
			req(0, 2, 3, true),
			settled(0, 0, 0, 5), // the TAT goes back 2 intervals
			req(0, 2, 3, true),
			req(0, 1, 2, true),
			settled(0, 2, 0, 2), // no longer the last spending: void
			settled(0, 3, 0, 3), // the last one is
			settled(s, 2, 4, 2), // a charge of 2 at 1s, where one has refilled: 4-2
		}},
	}
	for _, tb := range tables {
		t.Run(tb.name, func(t *testing.T) {
			var st limiter.State
			ds := make([]limiter.Decision, len(tb.steps))
			for i, step := range tb.steps {
				now := base.Add(step.at)
				var d limiter.Decision
				if step.of < 0 {
					d, st = limiter.Decide(tb.limit, st, now, step.cost)
					if d.Allowed != step.allowed {
						t.Fatalf("step %d: allowed %v, want %v (%+v)", i, d.Allowed, step.allowed, d)
					}
				} else {
					st, d = limiter.Settle(tb.limit, st, now, ds[step.of].Reservation, tb.steps[step.of].cost, step.actual)
				}
				ds[i] = d
				if d.Remaining != step.remaining {
					t.Fatalf("step %d: remaining %d, want %d (%+v)", i, d.Remaining, step.remaining, d)
				}
			}
		})
	}
}
