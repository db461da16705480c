package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// SettleTable is a time-step table of reservations and their settling
// (store.Settler): a request reserves its cost when it is decided, and a
// later step settles it at its actual cost.
type SettleTable struct {
	// Name is unique among the tables.
	Name  string
	Limit limiter.Limit
	Base  time.Time
	Steps []SettleStep
}

// SettleStep is a request of Cost (Of < 0), or the settling of the request
// made at step Of at its Actual cost; Limit, when set, is the limit of a
// request instead of the table's (a reload). Remaining is what the step
// leaves (a settle's decision is a look), Allowed whether a request passes.
type SettleStep struct {
	At        time.Duration
	Cost      int64
	Of        int
	Actual    int64
	Limit     limiter.Limit
	Allowed   bool
	Remaining int64
}

func reserve(at time.Duration, cost, remaining int64, allowed bool) SettleStep {
	return SettleStep{At: at, Cost: cost, Of: -1, Allowed: allowed, Remaining: remaining}
}

func settleAt(at time.Duration, of int, actual, remaining int64) SettleStep {
	return SettleStep{At: at, Of: of, Actual: actual, Remaining: remaining, Allowed: true}
}

// Key is the table's store key.
func (tb SettleTable) Key() store.Key { return store.NewKey("storetest-settle", tb.Name) }

// SettleTables returns the settle tables. Each was worked out by hand from
// limiter.Settle's rules (docs/algorithms.md, "Settling after the
// response"); the arithmetic is in the comments.
func SettleTables() []SettleTable {
	fw := limiter.MustNew(limiter.FixedWindow, 5, minute, 0)
	return []SettleTable{
		{"fixed_window/refund_then_charge", fw, aligned, []SettleStep{
			reserve(0, 2, 3, true), reserve(sec, 3, 0, true), reserve(2*sec, 1, 0, false),
			settleAt(3*sec, 0, 0, 2), // refunded whole: count 3
			reserve(4*sec, 2, 0, true),
			settleAt(5*sec, 1, 4, 0), // a charge of 1 stops at the rate
			reserve(6*sec, 1, 0, false),
		}},
		{"fixed_window/void_in_the_next_window", fw, aligned, []SettleStep{
			reserve(59*sec, 5, 0, true), reserve(61*sec, 5, 0, true),
			settleAt(62*sec, 0, 0, 0), // its window has gone
			settleAt(62*sec, 1, 2, 3),
		}},
		{"fixed_window/void_under_another_limit", fw, aligned, []SettleStep{
			reserve(0, 5, 0, true),
			{At: sec, Cost: 1, Of: -1, Limit: limiter.MustNew(limiter.FixedWindow, 6, minute, 0), Allowed: true, Remaining: 0},
			settleAt(2*sec, 0, 0, 0), // the key is held under 6/m now: left as it is (6 - 6 under 5/m: 0)
		}},
		{"sliding_window/previous_counter", limiter.MustNew(limiter.SlidingWindow, 10, minute, 0), aligned, []SettleStep{
			reserve(30*sec, 10, 0, true),
			reserve(90*sec, 5, 0, true), // prev 10 weighs 10*30/60 = 5
			settleAt(90*sec, 0, 4, 3),   // prev 4 weighs 2: used 2+5 = 7
			settleAt(90*sec, 1, 0, 8),
		}},
		{"sliding_log/entry", limiter.MustNew(limiter.SlidingLog, 3, minute, 0), aligned, []SettleStep{
			reserve(0, 1, 2, true), reserve(sec, 2, 0, true),
			settleAt(2*sec, 1, 0, 2), // the entry at 1s goes
			reserve(3*sec, 2, 0, true),
			settleAt(61*sec, 0, 0, 1), // the entry at 0 has expired: void
			settleAt(62*sec, 3, 3, 0), // +1 on the entry at 3s
			reserve(62*sec, 1, 0, false),
		}},
		{"token_bucket/refund_while_last", limiter.MustNew(limiter.TokenBucket, 10, 10*sec, 4), aligned, []SettleStep{
			reserve(0, 4, 0, true),
			settleAt(500*ms, 0, 1, 3), // 3 back at 0, half a token since: 3
			reserve(sec, 2, 2, true),  // 4 at 1s
			settleAt(sec, 0, 0, 2),    // no longer the last change: void
			settleAt(sec, 2, 0, 4),
		}},
		{"token_bucket/refund_after_refill_void", limiter.MustNew(limiter.TokenBucket, 2, 2*sec, 2), aligned, []SettleStep{
			reserve(0, 2, 0, true), reserve(2*sec, 2, 0, true),
			settleAt(2*sec, 0, 0, 0),
			reserve(2*sec, 1, 0, false),
		}},
		{"token_bucket/charge_outlives_reset", limiter.MustNew(limiter.TokenBucket, 1, sec, 10), aligned, []SettleStep{
			reserve(0, 1, 9, true),      // reset 1s
			settleAt(0, 0, 10, 0),       // 9 more: empty, reset 10s
			reserve(5*sec, 6, 5, false), // 5 refilled: a store that kept the old reset forgot the charge
		}},
		{"leaky_bucket/refund_and_charge", limiter.MustNew(limiter.LeakyBucket, 10, 10*sec, 5), aligned, []SettleStep{
			reserve(0, 5, 0, true),
			settleAt(0, 0, 2, 3),
			reserve(0, 3, 0, true),
			settleAt(0, 2, 9, 0),
			reserve(sec, 1, 0, true),
		}},
		{"gcra/refund_and_charge", limiter.MustNew(limiter.GCRA, 10, 10*sec, 5), aligned, []SettleStep{
			reserve(0, 2, 3, true),
			settleAt(0, 0, 0, 5), // the TAT goes back 2 intervals
			reserve(0, 2, 3, true),
			reserve(0, 1, 2, true),
			settleAt(0, 2, 0, 2),   // no longer the last spending: void
			settleAt(0, 3, 0, 3),   // the last one is
			settleAt(sec, 2, 4, 2), // a charge of 2 at 1s, one refilled: 4-2
		}},
		{"token_bucket/refund_after_a_look", limiter.MustNew(limiter.TokenBucket, 10, 10*sec, 4), aligned, []SettleStep{
			reserve(0, 3, 1, true),
			reserve(2*sec, 0, 3, true), // a look: 2 refilled
			settleAt(2*sec, 0, 0, 4),   // still the last spending: 3 back, up to the burst
		}},
		{"leaky_bucket/refund_partly_drained", limiter.MustNew(limiter.LeakyBucket, 1, sec, 4), aligned, []SettleStep{
			reserve(0, 2, 2, true),
			reserve(sec, 0, 3, true), // a look measures the level: 1 left in it
			settleAt(sec, 0, 0, 4),   // only the 1 not drained comes back
		}},
	}
}

// RunSettle runs the settle tables against stores from newStore, which
// must implement store.Settler, each table on a fresh store.
func RunSettle(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	for _, tb := range SettleTables() {
		t.Run(tb.Name, func(t *testing.T) { CheckSettle(t, open(t, newStore), tb) })
	}
}

// CheckSettle runs the steps of tb on s, which must be a store.Settler,
// and reports every step whose outcome differs from the table's.
func CheckSettle(t *testing.T, s store.Store, tb SettleTable) {
	t.Helper()
	ctx := context.Background()
	settler, ok := s.(store.Settler)
	if !ok {
		t.Fatalf("%T is not a store.Settler", s)
	}
	ds := make([]limiter.Decision, len(tb.Steps))
	for i, step := range tb.Steps {
		now := tb.Base.Add(step.At)
		l := tb.Limit
		if !step.Limit.IsZero() {
			l = step.Limit
		}
		var d limiter.Decision
		var err error
		if step.Of < 0 {
			d, err = s.Decide(ctx, tb.Key(), l, now, step.Cost)
		} else {
			d, err = settler.Settle(ctx, tb.Key(), l, now, ds[step.Of].Reservation, tb.Steps[step.Of].Cost, step.Actual)
		}
		ds[i] = d
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if d.Allowed != step.Allowed || d.Remaining != step.Remaining {
			t.Errorf("step %d (at +%v): allowed %v remaining %d, want %v and %d (%s)", i, step.At, d.Allowed, d.Remaining, step.Allowed, step.Remaining, format(d))
		}
	}
}
