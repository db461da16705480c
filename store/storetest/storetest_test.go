package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// TestTablesCoverEveryAlgorithm checks that the tables are well formed and
// that every algorithm has each kind of table.
func TestTablesCoverEveryAlgorithm(t *testing.T) {
	names := map[string]bool{}
	for _, tb := range Tables() {
		if names[tb.Name] {
			t.Errorf("two tables named %q", tb.Name)
		}
		names[tb.Name] = true
		if len(tb.Steps) == 0 {
			t.Errorf("%s has no steps", tb.Name)
		}
		if alg := tb.Limit.Algorithm(); !tb.Limit.IsZero() && !strings.HasPrefix(tb.Name, alg.String()+"/") {
			t.Errorf("%s is under %v", tb.Name, alg)
		}
		for i, s := range tb.Steps {
			if l := s.limit(tb.Limit); s.Want.Limit != l.Burst() {
				t.Errorf("%s step %d wants Limit %d, the limit's burst is %d", tb.Name, i, s.Want.Limit, l.Burst())
			}
		}
	}
	kinds := []string{"fill_and_deny", "cost", "1_per_366_days", "1_per_1ms", "idle_year", "clock_backwards",
		"before_1970", "after_2112", "int64_extremes", "keys_differ_by_encoding", "extreme_costs", "limit_changed"}
	for _, alg := range limiter.Algorithms {
		for _, kind := range kinds {
			if !names[alg.String()+"/"+kind] {
				t.Errorf("no table %s/%s", alg, kind)
			}
		}
	}
}

func TestTablesAreNewOnEachCall(t *testing.T) {
	a := Tables()
	a[0].Steps[0].Cost = -42
	if b := Tables(); b[0].Steps[0].Cost == -42 {
		t.Error("a change to one call's tables shows in the next call's")
	}
}

func TestReferenceCloseAndContext(t *testing.T) {
	s := NewReference()
	l := must(limiter.TokenBucket, 1, sec, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Decide(ctx, store.RawKey("k"), l, aligned, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Decide with a cancelled context: %v", err)
	}
	if _, err := s.DecideEach(ctx, nil, nil, aligned); !errors.Is(err, context.Canceled) {
		t.Errorf("DecideEach with a cancelled context: %v", err)
	}
	checkClosed(t, s)
	if err := s.Close(); !errors.Is(err, store.ErrClosed) {
		t.Errorf("second Close: %v, want store.ErrClosed", err)
	}
}

// TestReferenceSettlesUnderAChangedDelay: a changed delay is not a changed
// limit (limiter.Limit.Same), so the reference settles a reservation made
// under one delay when the limit comes back with another, as the memory
// and Redis stores do.
func TestReferenceSettlesUnderAChangedDelay(t *testing.T) {
	s := NewReference().(store.Settler)
	l := must(limiter.TokenBucket, 10, sec, 0)
	held, err := l.WithDelay(sec)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := s.(store.Store).Decide(ctx, store.RawKey("k"), held, aligned, 10)
	if err != nil || !d.Allowed || d.Remaining != 0 {
		t.Fatalf("Decide 10 of 10: %+v, %v", d, err)
	}
	d, err = s.Settle(ctx, store.RawKey("k"), l, aligned, d.Reservation, 10, 0)
	if err != nil || d.Remaining != 10 {
		t.Errorf("Settle at 0 of 10 under the same limit without its delay: %+v, %v; want Remaining 10", d, err)
	}
}
