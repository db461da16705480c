package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// AllTable is one table of store.Store's DecideAll: calls made in
// order on one store, each deciding the requests of one HTTP request (one
// per matching rule) all or nothing.
type AllTable struct {
	// Name is unique among the tables, such as "all/one_full".
	Name string
	// Base is the time that AllStep.At counts from.
	Base time.Time
	// Steps are the calls, in order.
	Steps []AllStep
}

// AllStep is one DecideAll call of an AllTable.
type AllStep struct {
	// At is when the call is made, as an offset from the table's Base.
	At time.Duration
	// Reqs are the call's requests, in order.
	Reqs []AllReq
}

// AllReq is one request of an AllStep and the parts of its decision worked
// out by hand. The whole decision must be the reference store's
// (NewReference), which decides with limiter.Decide.
type AllReq struct {
	// Rule names the request's key within the table: AllTable.Key(Rule).
	Rule string
	// Limit and Cost are the request's; Shadow marks a shadow rule's.
	Limit  limiter.Limit
	Cost   int64
	Shadow bool
	// Allowed, Remaining and Delay are the decision's.
	Allowed   bool
	Remaining int64
	Delay     time.Duration
}

// Key returns the key of rule in the table: a key of the group
// "storetest-all/" + the table's name, so that on a Redis Cluster every
// key of a table has one hash tag.
func (tb AllTable) Key(rule string) store.Key {
	return store.GroupKey("storetest-all/"+tb.Name, rule)
}

// allTable returns a table at aligned, its steps one second apart.
func allTable(name string, steps ...[]AllReq) AllTable {
	tb := AllTable{Name: name, Base: aligned}
	for i, reqs := range steps {
		tb.Steps = append(tb.Steps, AllStep{At: time.Duration(i) * sec, Reqs: reqs})
	}
	return tb
}

// ok is a request that must be allowed, leaving remaining; no is one that
// must be denied, with remaining left.
func ok(rule string, l limiter.Limit, cost, remaining int64) AllReq {
	return AllReq{Rule: rule, Limit: l, Cost: cost, Allowed: true, Remaining: remaining}
}

func no(rule string, l limiter.Limit, cost, remaining int64) AllReq {
	return AllReq{Rule: rule, Limit: l, Cost: cost, Remaining: remaining}
}

// shadow returns r as a shadow rule's request.
func (r AllReq) shadow() AllReq {
	r.Shadow = true
	return r
}

// after returns r held for delay.
func (r AllReq) after(delay time.Duration) AllReq {
	r.Delay = delay
	return r
}

// AllTables returns the tables of DecideAll: a rule without room keeps
// every other enforcing rule's cost unspent (its look is answered
// instead); a shadow rule without room stops nothing, and an enforcing
// denial spends no shadow rule either; rules with a delay, held or
// refused; the same key twice in one call, the second seeing the first; a
// zero Limit; the clock going backwards. Every step after a refused one
// shows, by what it is allowed, that nothing was spent. The slice is new
// on each call.
func AllTables() []AllTable {
	// Every fixed window here is a minute from aligned, and every step is
	// within its first one unless it says otherwise.
	three, one := must(limiter.FixedWindow, 3, minute, 0), must(limiter.FixedWindow, 1, minute, 0)
	two, zero := must(limiter.FixedWindow, 2, minute, 0), limiter.Limit{}
	// 1/s, burst 1, requests held up to 1s for their turn: one request
	// empties it, the next waits 1s, the one after would wait 2s.
	queue, err := must(limiter.TokenBucket, 1, sec, 1).WithDelay(sec)
	if err != nil {
		panic(err)
	}
	return []AllTable{
		allTable("all/one_full",
			[]AllReq{ok("a", three, 1, 2), ok("b", one, 1, 0)},
			[]AllReq{ok("a", three, 1, 2), no("b", one, 1, 0)}, // a's look: 2 left, not 1
			[]AllReq{ok("a", three, 2, 0)},                     // 2 were left
			[]AllReq{no("a", three, 1, 0), no("b", one, 1, 0)},
		),
		allTable("all/shadow_full",
			[]AllReq{ok("a", three, 1, 2), ok("s", one, 1, 0).shadow()},
			[]AllReq{ok("a", three, 1, 1), no("s", one, 1, 0).shadow()}, // a spends
			[]AllReq{ok("a", three, 1, 0)},
		),
		allTable("all/enforced_full_spares_shadow",
			[]AllReq{ok("a", one, 1, 0), ok("s", two, 1, 1).shadow()},
			[]AllReq{no("a", one, 1, 0), ok("s", two, 1, 1).shadow()}, // s's look
			[]AllReq{ok("s", two, 1, 0).shadow()},                     // 1 was left
		),
		allTable("all/costs",
			[]AllReq{ok("a", three, 2, 1), ok("b", three, 3, 0)},
			[]AllReq{no("a", three, 2, 1), ok("b", three, 0, 0)}, // a look of its own: allowed
			[]AllReq{ok("a", three, 1, 0), ok("b", three, 0, 0)},
		),
		// At one instant throughout, so that the bucket does not refill.
		{Name: "all/delay", Base: aligned, Steps: []AllStep{
			{Reqs: []AllReq{ok("q", queue, 1, 0), ok("b", one, 1, 0)}},
			// q would be held 1s, but b refuses: q's look, nothing held.
			{Reqs: []AllReq{ok("q", queue, 1, 0), no("b", one, 1, 0)}},
			// Held 1s, not 2s: the step before reserved nothing.
			{Reqs: []AllReq{ok("q", queue, 1, 0).after(sec), ok("c", three, 1, 2)}},
			// q would wait 2s: refused, and c spends nothing.
			{Reqs: []AllReq{no("q", queue, 1, 0), ok("c", three, 1, 2)}},
			{Reqs: []AllReq{ok("c", three, 1, 1)}},
		}},
		{Name: "all/delay_shadow", Base: aligned, Steps: []AllStep{
			{Reqs: []AllReq{ok("q", queue, 1, 0).shadow(), ok("a", three, 1, 2)}},
			{Reqs: []AllReq{ok("q", queue, 1, 0).shadow().after(sec), ok("a", three, 1, 1)}},
			{Reqs: []AllReq{no("q", queue, 1, 0).shadow(), ok("a", three, 1, 0)}}, // stops nothing
		}},
		// The same key twice decides in turn: the second sees the first.
		allTable("all/same_key_twice",
			[]AllReq{ok("a", three, 1, 2), ok("a", three, 1, 1)},
			// 1 left: the first would take it, the second finds none.
			[]AllReq{ok("a", three, 1, 1), no("a", three, 1, 0)},
			[]AllReq{ok("a", three, 1, 0)},
		),
		// Refused by another rule: each of the key's requests answers a
		// look at the key as it stands.
		allTable("all/same_key_twice_refused",
			[]AllReq{ok("a", three, 1, 2), ok("b", one, 1, 0)},
			[]AllReq{ok("a", three, 1, 2), ok("a", three, 1, 2), no("b", one, 1, 0)},
			[]AllReq{ok("a", three, 2, 0)}, // 2 were left
		),
		allTable("all/zero_limit",
			[]AllReq{ok("a", three, 1, 3), no("z", zero, 1, 0)}, // a's look
			[]AllReq{ok("a", three, 1, 2), no("z", zero, 1, 0).shadow()},
			[]AllReq{ok("a", three, 2, 0)},
		),
		allTable("all/negative_cost",
			[]AllReq{ok("a", three, 1, 3), no("b", three, -1, 0)}, // a's look
			[]AllReq{ok("a", three, 3, 0)},
		),
		allClockBackwards(),
	}
}

// allClockBackwards goes back in time between calls: at 30s, then at 10s
// (the same minute's window: it still counts), then a minute on.
func allClockBackwards() AllTable {
	two, one := must(limiter.FixedWindow, 2, minute, 0), must(limiter.FixedWindow, 1, minute, 0)
	return AllTable{Name: "all/clock_backwards", Base: aligned, Steps: []AllStep{
		{At: 30 * sec, Reqs: []AllReq{ok("a", two, 1, 1), ok("b", one, 1, 0)}},
		{At: 10 * sec, Reqs: []AllReq{ok("a", two, 1, 1), no("b", one, 1, 0)}},
		{At: 10 * sec, Reqs: []AllReq{ok("a", two, 1, 0)}},
		{At: 70 * sec, Reqs: []AllReq{ok("a", two, 1, 1), ok("b", one, 1, 0)}},
	}}
}

// RunDecideAll runs every table of AllTables on a fresh store from
// newStore; Run closes it when the subtest ends.
func RunDecideAll(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	RunDecideAllSupported(t, newStore, func(limiter.Algorithm) bool { return true })
}

// RunDecideAllSupported is RunDecideAll for a store that keeps only the
// algorithms supported reports true for: it runs the tables whose every
// limit (but a zero one) is of such an algorithm, and fails if that
// leaves none.
func RunDecideAllSupported(t *testing.T, newStore func(t *testing.T) store.Store, supported func(limiter.Algorithm) bool) {
	t.Helper()
	ran := 0
	for _, tb := range AllTables() {
		if !tb.supported(supported) {
			continue
		}
		ran++
		t.Run(tb.Name, func(t *testing.T) { CheckAll(t, open(t, newStore), tb) })
	}
	if ran == 0 {
		t.Fatal("no DecideAll table has only supported algorithms")
	}
}

// supported reports whether every limit of tb but a zero one is of an
// algorithm supported reports true for.
func (tb AllTable) supported(supported func(limiter.Algorithm) bool) bool {
	for _, step := range tb.Steps {
		for _, r := range step.Reqs {
			if !r.Limit.IsZero() && !supported(r.Limit.Algorithm()) {
				return false
			}
		}
	}
	return true
}

// CheckAll makes the calls of tb in order on s and reports every decision
// that differs from the reference store's or from the table's. It stops
// at the first error from the store.
func CheckAll(t *testing.T, s store.Store, tb AllTable) {
	t.Helper()
	all := s
	ctx := context.Background()
	ref := NewReference()
	for i, step := range tb.Steps {
		reqs := make([]store.Request, len(step.Reqs))
		for k, r := range step.Reqs {
			reqs[k] = store.Request{Key: tb.Key(r.Rule), Limit: r.Limit, Cost: r.Cost, Shadow: r.Shadow}
		}
		now := tb.Base.Add(step.At)
		got, err := all.DecideAll(ctx, nil, reqs, now)
		if err != nil {
			t.Fatalf("step %d (at base+%v): DecideAll: %v", i, step.At, err)
		}
		want, err := ref.DecideAll(ctx, nil, reqs, now)
		if err != nil || len(want) != len(reqs) {
			t.Fatalf("step %d: the reference store: %d results, %v", i, len(want), err)
		}
		if len(got) != len(reqs) {
			t.Fatalf("step %d (at base+%v): %d results for %d requests", i, step.At, len(got), len(reqs))
		}
		for k, r := range step.Reqs {
			checkAllResult(t, i, k, r, got[k], want[k].Decision)
		}
	}
}

// checkAllResult reports how request k of step i got other than its
// table's decision (hand) or the reference store's (ref).
func checkAllResult(t *testing.T, i, k int, hand AllReq, got store.Result, ref limiter.Decision) {
	t.Helper()
	d := got.Decision
	switch {
	case got.Err != nil:
		t.Errorf("step %d request %d (%s, cost %d): %v", i, k, hand.Rule, hand.Cost, got.Err)
	case d.Allowed != hand.Allowed || d.Remaining != hand.Remaining || d.Delay != hand.Delay:
		t.Errorf("step %d request %d (%s, cost %d, shadow %v): got %s\nwant Allowed:%v Remaining:%d Delay:%v",
			i, k, hand.Rule, hand.Cost, hand.Shadow, format(d), hand.Allowed, hand.Remaining, hand.Delay)
	case d != ref:
		t.Errorf("step %d request %d (%s, cost %d): got %s\nthe reference store's %s",
			i, k, hand.Rule, hand.Cost, format(d), format(ref))
	}
}
