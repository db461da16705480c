package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/store"
)

// LeaseStore is a store with concurrency leases, as RunLeases tests it.
type LeaseStore interface {
	store.Leaser
	Close() error
}

// LeaseOp is what a LeaseStep does.
type LeaseOp uint8

// The operations of a LeaseStep.
const (
	Acquire LeaseOp = iota // Leaser.Acquire of Cost under the step's limit
	Release                // Leaser.Release of the lease of step Of
	Renew                  // Leaser.Renew of the lease of step Of
)

// LeaseTable is one time-step table of concurrency leases: operations on
// one store, in order, each with what it must answer.
type LeaseTable struct {
	// Name is unique among the lease tables.
	Name string
	// Limit applies to every Acquire whose step has no Limit of its own.
	Limit store.Concurrency
	// Base is the time that LeaseStep.At counts from.
	Base  time.Time
	Steps []LeaseStep
}

// LeaseStep is one operation of a LeaseTable.
type LeaseStep struct {
	At time.Duration // when, from the table's Base
	Op LeaseOp
	// Key is the key acquired on; "" means the table's, LeaseTable.Key().
	Key store.Key
	// Limit, if not nil, replaces the table's for this Acquire.
	Limit *store.Concurrency
	// Cost is an Acquire's cost.
	Cost int64
	// Of is the index of the Acquire step whose lease a Release or Renew
	// names (the zero Lease if that step got none).
	Of int
	// Want is an Acquire's decision: Allowed, Limit, InFlight and
	// RetryAfter; it must hold a lease of Cost and the limit's TTL on Key
	// exactly when allowed with a cost above 0.
	Want store.LeaseDecision
	// Kept is what a Renew must report.
	Kept bool
}

// Key returns the key that the table's steps use unless they name one.
func (tb LeaseTable) Key() store.Key { return store.NewKey("storetest-lease", tb.Name) }

// RunLeases runs the lease suite against the stores newStore returns: every
// table of LeaseTables (each on a fresh store), concurrent acquires on one
// key, a Renewer keeping leases on a fake clock, and use after Close. The
// store must judge expiry at the times it is passed (a Redis store needs
// Options.CallerTime). Run closes every store when its subtest ends.
func RunLeases(t *testing.T, newStore func(t *testing.T) LeaseStore) {
	t.Helper()
	t.Run("tables", func(t *testing.T) {
		for _, tb := range LeaseTables() {
			t.Run(tb.Name, func(t *testing.T) { CheckLeases(t, open(t, newStore), tb) })
		}
	})
	t.Run("concurrent", func(t *testing.T) { checkLeasesConcurrent(t, open(t, newStore)) })
	t.Run("renewer", func(t *testing.T) { checkRenewer(t, open(t, newStore)) })
	t.Run("closed", func(t *testing.T) { checkLeasesClosed(t, newStore(t)) })
}

// CheckLeases runs the steps of tb in order on s and reports every answer
// that differs from the step's. It stops at the first error from the store.
func CheckLeases(t *testing.T, s store.Leaser, tb LeaseTable) {
	t.Helper()
	ctx := context.Background()
	leases := make([]store.Lease, len(tb.Steps))
	for i, st := range tb.Steps {
		now := tb.Base.Add(st.At)
		switch st.Op {
		case Acquire:
			key, limit := st.Key, tb.Limit
			if key == (store.Key{}) {
				key = tb.Key()
			}
			if st.Limit != nil {
				limit = *st.Limit
			}
			got, err := s.Acquire(ctx, key, limit, now, st.Cost)
			if err != nil {
				t.Fatalf("step %d: Acquire(%q, %+v, base+%v, cost %d): %v", i, key, limit, st.At, st.Cost, err)
			}
			leases[i] = got.Lease
			if msg := leaseMismatch(got, st.Want, key, limit, st.Cost); msg != "" {
				t.Errorf("step %d: Acquire at base+%v, cost %d, %+v: %s", i, st.At, st.Cost, limit, msg)
			}
		case Release:
			if err := s.Release(ctx, leases[st.Of], now); err != nil {
				t.Fatalf("step %d: Release of step %d's lease: %v", i, st.Of, err)
			}
		case Renew:
			kept, err := s.Renew(ctx, []store.Lease{leases[st.Of]}, now)
			if err != nil {
				t.Fatalf("step %d: Renew of step %d's lease: %v", i, st.Of, err)
			}
			if len(kept) != 1 || kept[0] != st.Kept {
				t.Errorf("step %d: Renew of step %d's lease at base+%v: got %v, want [%v]", i, st.Of, st.At, kept, st.Kept)
			}
		}
	}
}

// leaseMismatch describes how got differs from want for an Acquire on key
// under limit, or returns "".
func leaseMismatch(got, want store.LeaseDecision, key store.Key, limit store.Concurrency, cost int64) string {
	lease := got.Lease
	got.Lease = store.Lease{}
	if got != want {
		return fmt.Sprintf("\n got %+v\nwant %+v", got, want)
	}
	holds := want.Allowed && cost > 0
	if lease.IsZero() == holds || holds && (lease.Key != key || lease.Cost != cost || lease.TTL != limit.LeaseTTL() || lease.ID == "") {
		return fmt.Sprintf("lease %+v: want one of cost %d, TTL %v on %q: %v", lease, cost, limit.LeaseTTL(), key, holds)
	}
	return ""
}

// checkLeasesConcurrent: many goroutines acquire on one key with room for
// n; exactly n get a lease, and releasing those frees the key.
func checkLeasesConcurrent(t *testing.T, s store.Leaser) {
	const n, tries = 8, 64
	ctx := context.Background()
	limit := store.Concurrency{Max: n, TTL: time.Hour}
	key, now := store.NewKey("storetest-lease", "concurrent"), aligned
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		got    []store.Lease
		failed atomic.Value
	)
	for range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := s.Acquire(ctx, key, limit, now, 1)
			if err != nil {
				failed.Store(err)
				return
			}
			if d.Allowed {
				mu.Lock()
				got = append(got, d.Lease)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d of %d concurrent acquires got a lease, want exactly %d", len(got), tries, n)
	}
	for _, l := range got {
		if err := s.Release(ctx, l, now); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := s.Acquire(ctx, key, limit, now, 0); err != nil || d.InFlight != 0 {
		t.Fatalf("after releasing every lease: %+v, %v; want 0 in flight", d, err)
	}
}

// checkRenewer: a Renewer ticking every 3s keeps a 10s lease past many
// TTLs and drops a lease it finds released; once it is closed, the lease
// expires within its TTL, and its Acquire gives back what it gets.
func checkRenewer(t *testing.T, s store.Leaser) {
	ctx := context.Background()
	clk := clock.NewFake(aligned)
	renewed := make(chan store.RenewReport, 1)
	r := store.NewRenewer(s, store.RenewerOptions{Clock: clk, Every: 3 * sec, OnRenew: func(rep store.RenewReport) { renewed <- rep }})
	defer r.Close()
	limit := store.Concurrency{Max: 1, TTL: 10 * sec}
	key := store.NewKey("storetest-lease", "renewer")
	if d, err := r.Acquire(ctx, key, limit, clk.Now(), 1); err != nil || !d.Allowed || r.Held() != 1 {
		t.Fatalf("first acquire: %+v, %v, %d held", d, err, r.Held())
	}
	for range 10 { // 30s: three TTLs
		clk.Advance(3 * sec)
		if rep := <-renewed; rep != (store.RenewReport{Renewed: 1}) {
			t.Fatalf("at %v: renewal %+v, want one lease renewed", clk.Now().Sub(aligned), rep)
		}
	}
	// A lease released behind the Renewer's back is reported lost and
	// dropped from its set.
	gone, err := r.Acquire(ctx, store.NewKey("storetest-lease", "renewer-gone"), limit, clk.Now(), 1)
	if err != nil || !gone.Allowed || s.Release(ctx, gone.Lease, clk.Now()) != nil {
		t.Fatalf("second lease: %+v, %v", gone, err)
	}
	clk.Advance(3 * sec)
	if rep := <-renewed; rep != (store.RenewReport{Renewed: 1, Lost: 1}) || r.Held() != 1 {
		t.Fatalf("renewal after a lease was released elsewhere: %+v, %d held; want 1 renewed, 1 lost, 1 held", rep, r.Held())
	}
	if d, err := s.Acquire(ctx, key, limit, clk.Now().Add(9*sec), 1); err != nil || d.Allowed {
		t.Fatalf("9s after the last renewal: %+v, %v; want the slot still held", d, err)
	}
	r.Close() // the holder dies: nobody renews
	if d, err := s.Acquire(ctx, key, limit, clk.Now().Add(10*sec), 1); err != nil || !d.Allowed {
		t.Fatalf("a TTL after the last renewal: %+v, %v; want the slot back", d, err)
	}
	other := store.NewKey("storetest-lease", "renewer-closed")
	if _, err := r.Acquire(ctx, other, limit, clk.Now(), 1); !errors.Is(err, store.ErrRenewerClosed) {
		t.Fatalf("a closed Renewer's acquire: %v, want store.ErrRenewerClosed", err)
	}
	if d, err := s.Acquire(ctx, other, limit, clk.Now(), 1); err != nil || !d.Allowed {
		t.Fatalf("the lease a closed Renewer got was not given back: %+v, %v", d, err)
	}
}

// checkLeasesClosed: every call after Close returns store.ErrClosed.
func checkLeasesClosed(t *testing.T, s LeaseStore) {
	ctx := context.Background()
	limit := store.Concurrency{Max: 1}
	d, err := s.Acquire(ctx, store.RawKey("k"), limit, aligned, 1)
	if err != nil || !d.Allowed {
		t.Fatalf("before Close: %+v, %v", d, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, store.RawKey("k"), limit, aligned, 1); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Acquire after Close: %v, want store.ErrClosed", err)
	}
	if err := s.Release(ctx, d.Lease, aligned); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Release after Close: %v, want store.ErrClosed", err)
	}
	if _, err := s.Renew(ctx, []store.Lease{d.Lease}, aligned); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Renew after Close: %v, want store.ErrClosed", err)
	}
}
