// Package storetest is the conformance suite that every store.Store must
// pass: the same time-step tables, batch, concurrency and close checks run
// against the memory store, the Redis store and the reference store, so that
// all of them decide exactly as limiter.Decide does.
//
// A store's test calls Run with a factory that returns a fresh store, one
// with its own key namespace (a Redis store gets a random key prefix):
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			return memory.New(memory.Options{})
//		})
//	}
//
// Run closes every store it is given. The store must decide at the time it
// is passed (a Redis store that reads Redis TIME needs a test mode that uses
// the caller's time). Tables returns the tables themselves, for a store
// whose tests need to run them one by one (Check runs one).
//
// Every expected value in the tables was worked out by hand from the
// algorithms' definitions in package limiter; comments show the arithmetic
// where a number is not obvious. NewReference is the reference store.
//
// RunDecideAll is the same for DecideAll: its tables
// (AllTables, checked by CheckAll) decide the rules of one request all or
// nothing, as the reference store's DecideAll does; RunDecideAllSupported
// runs those of them a store that keeps only some algorithms can pass.
//
// RunLeases is the same for concurrency leases (store.Leaser): its tables
// (LeaseTables, checked by CheckLeases) follow store.Concurrency.Decide.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// Table is one time-step table: a limit and the requests made under it, in
// order, each with the decision it must get.
type Table struct {
	// Name is unique among the tables, such as "gcra/burst_differs".
	Name string
	// Limit applies to every step that names none of its own.
	Limit limiter.Limit
	// Base is the time that Step.At counts from.
	Base time.Time
	// Steps are decided in order, on one store.
	Steps []Step
	// Refill reports whether the steps' Want.Refill was worked out by hand
	// too. The tables written before Decision had a Refill leave it out,
	// and Check takes limiter.Decide's for it.
	Refill bool
}

// Step is one request of a Table and the decision it must get.
type Step struct {
	// At is when the request is made, as an offset from the table's Base.
	At time.Duration
	// Time, when it is not the zero time, is when the request is made
	// instead of Base+At (for times far from any base).
	Time time.Time
	// Key is the store key; "" means the table's own key, Table.Key().
	Key store.Key
	// Limit, when it is not the zero Limit, is the limit of this step
	// instead of the table's: a reload changed it between two steps.
	Limit limiter.Limit
	// Cost is the request's cost.
	Cost int64
	// Cancel makes the step a store.Canceler's Cancel of the reservation
	// that step Of of the table made (at the step's time; Cost is ignored):
	// Want.Allowed is whether it must be given back, and the rest of Want
	// is not compared.
	Cancel bool
	Of     int
	// Want is the decision the request must get, all eight fields; but for
	// the tables whose Refill is false, Want.Refill is not written out:
	// the store's Refill must then be limiter.Decide's. A zero
	// Want.Reservation is not written out either (only the delay tables
	// write theirs): the store's must be limiter.Decide's, the time it was
	// passed and the state after it.
	Want limiter.Decision
}

// Key returns the key that the table's steps use unless they name one:
// store.NewKey("storetest", tb.Name).
func (tb Table) Key() store.Key { return store.NewKey("storetest", tb.Name) }

// Now returns the time of step s of a table whose base is base.
func (s Step) Now(base time.Time) time.Time {
	if !s.Time.IsZero() {
		return s.Time
	}
	return base.Add(s.At)
}

// limit returns the step's limit: its own, or else the table's.
func (s Step) limit(table limiter.Limit) limiter.Limit {
	if s.Limit.IsZero() {
		return table
	}
	return s.Limit
}

// Tables returns every time-step table of the suite: for each algorithm,
// filling up and being denied, window boundaries, costs, extreme rates,
// bursts, uneven refill, idle gaps, a clock going backwards, clamped and
// extreme times, and keys that differ only in their encoding. The slice is
// new on each call.
func Tables() []Table {
	var all []Table
	all = append(all, fixedWindowTables()...)
	all = append(all, slidingWindowTables()...)
	all = append(all, slidingLogTables()...)
	for _, alg := range []limiter.Algorithm{limiter.TokenBucket, limiter.GCRA, limiter.LeakyBucket} {
		all = append(all, bucketTables(alg)...)
	}
	all = append(all, edgeTables()...)
	all = append(all, refillTables()...)
	all = append(all, delayTables()...)
	return append(all, limitChangeTables()...)
}

// Run runs the whole suite against the stores that newStore returns: every
// table of Tables (each on a fresh store), DecideEach against one-by-one
// Decide, concurrent callers on one key, and use after Close. newStore must
// return a new store, or one with a key namespace of its own, on every call;
// Run closes it when the subtest ends.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	t.Run("tables", func(t *testing.T) {
		for _, tb := range Tables() {
			t.Run(tb.Name, func(t *testing.T) { Check(t, open(t, newStore), tb) })
		}
	})
	t.Run("batch", func(t *testing.T) { checkBatch(t, open(t, newStore), open(t, newStore)) })
	t.Run("concurrent", func(t *testing.T) {
		for _, alg := range limiter.Algorithms {
			t.Run(alg.String(), func(t *testing.T) { checkConcurrent(t, open(t, newStore), alg) })
		}
	})
	t.Run("closed", func(t *testing.T) { checkClosed(t, newStore(t)) })
}

// open returns a new store that is closed when t ends.
func open[S interface{ Close() error }](t *testing.T, newStore func(t *testing.T) S) S {
	t.Helper()
	s := newStore(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// Check decides the steps of tb in order on s and reports every decision
// that differs from the step's Want. It stops at the first error from the
// store.
func Check(t *testing.T, s store.Store, tb Table) {
	t.Helper()
	ctx := context.Background()
	ref := NewReference()
	for i, step := range tb.Steps {
		key := step.Key
		if key == (store.Key{}) {
			key = tb.Key()
		}
		now := step.Now(tb.Base)
		l := step.limit(tb.Limit)
		if step.Cancel {
			checkCancel(t, s, tb, i, key, l)
			_, _ = ref.(store.Canceler).Cancel(ctx, key, l, tb.Steps[step.Of].Want.Reservation, tb.Steps[step.Of].Cost)
			continue
		}
		got, err := s.Decide(ctx, key, l, now, step.Cost)
		if err != nil {
			t.Fatalf("step %d (%v, key %q, cost %d): %v", i, now, key, step.Cost, err)
		}
		want := step.Want
		d, _ := ref.Decide(ctx, key, l, now, step.Cost)
		if !tb.Refill {
			want.Refill = d.Refill
		}
		if want.Reservation == (limiter.Reservation{}) { // left out: limiter.Decide's (the store's time)
			want.Reservation = d.Reservation
		}
		if got != want {
			when := "base+" + step.At.String()
			if !step.Time.IsZero() {
				when = now.UTC().Format(time.RFC3339Nano)
			}
			t.Errorf("step %d (at %s, key %q, cost %d) of %v:\n got %s\nwant %s",
				i, when, key, step.Cost, l, format(got), format(want))
		}
	}
}

// checkCancel makes step i of tb, a Cancel, on s.
func checkCancel(t *testing.T, s store.Store, tb Table, i int, key store.Key, l limiter.Limit) {
	t.Helper()
	c, ok := s.(store.Canceler)
	if !ok {
		t.Fatalf("step %d: the store is no store.Canceler", i)
	}
	step, of := tb.Steps[i], tb.Steps[tb.Steps[i].Of]
	got, err := c.Cancel(context.Background(), key, l, of.Want.Reservation, of.Cost)
	if err != nil {
		t.Fatalf("step %d (cancel of step %d): %v", i, step.Of, err)
	}
	if got != step.Want.Allowed {
		t.Errorf("step %d of %v: cancel of step %d gave back %v, want %v", i, l, step.Of, got, step.Want.Allowed)
	}
}

// format prints a decision with RetryAfter Never spelled out.
func format(d limiter.Decision) string {
	retry := d.RetryAfter.String()
	if d.RetryAfter == limiter.Never {
		retry = "Never"
	}
	return fmt.Sprintf("{Allowed:%v Limit:%d Remaining:%d RetryAfter:%s Reset:%v Refill:%v Delay:%v Reservation:%+v}",
		d.Allowed, d.Limit, d.Remaining, retry, d.Reset, d.Refill, d.Delay, d.Reservation)
}
