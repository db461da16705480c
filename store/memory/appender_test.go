package memory

import (
	"errors"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// TestDecideEachMatchesDecideEach runs the same batches through
// DecideEach and DecideEach on twin stores: every algorithm, new
// and held keys, a key decided under another limit, keys that find no room
// (the overflow counter), a denial and a negative cost. The appended
// results must equal DecideEach's, after what dst already held.
func TestDecideEachMatchesDecideEach(t *testing.T) {
	opts := Options{MaxKeys: 8, Shards: 1}
	a, b := newTest(t, opts), newTest(t, opts)
	var reqs []store.Request
	for i, alg := range limiter.Algorithms {
		l := limiter.MustNew(alg, 2, time.Second, 0)
		key := store.NewKey("rule", alg.String())
		reqs = append(reqs, store.Request{Key: key, Limit: l, Cost: 1}, store.Request{Key: key, Limit: l, Cost: 2},
			store.Request{Key: store.NewKey("rule", "other", alg.String()), Limit: l, Cost: int64(i%2 - 1)})
	}
	reqs = append(reqs, store.Request{Key: reqs[0].Key, Limit: limiter.MustNew(limiter.GCRA, 5, time.Minute, 0), Cost: 1})
	sentinel := store.Result{Err: errors.New("already in dst")}
	for step := range 3 {
		now := t0.Add(time.Duration(step) * 300 * time.Millisecond)
		want, err := b.DecideEach(ctx, nil, reqs, now)
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.DecideEach(ctx, []store.Result{sentinel}, reqs, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1+len(want) || got[0] != sentinel {
			t.Fatalf("step %d: %d results after %+v, want %d after the sentinel", step, len(got), got[0], len(want))
		}
		for i := range want {
			if got[1+i] != want[i] {
				t.Errorf("step %d request %d (%+v): DecideEach %+v, DecideEach %+v", step, i, reqs[i], got[1+i], want[i])
			}
		}
	}
}

// TestDecideEachRoomAndClose: with room in dst a batch of held keys
// allocates nothing; after Close the batch returns dst as it was and
// store.ErrClosed.
func TestDecideEachRoomAndClose(t *testing.T) {
	s := newTest(t, Options{})
	l := limiter.MustNew(limiter.GCRA, 1000, time.Second, 0)
	reqs := []store.Request{{Key: store.RawKey("a"), Limit: l, Cost: 1}, {Key: store.RawKey("b"), Limit: l, Cost: 1}}
	dst := make([]store.Result, 0, len(reqs))
	if _, err := s.DecideEach(ctx, dst, reqs, t0); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := s.DecideEach(ctx, dst, reqs, t0); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per batch, want 0", allocs)
	}
	s.Close()
	dst = append(dst, store.Result{})
	got, err := s.DecideEach(ctx, dst, reqs, t0)
	if !errors.Is(err, store.ErrClosed) || len(got) != 1 {
		t.Errorf("after Close: %d results, %v; want dst's 1 and ErrClosed", len(got), err)
	}
}
