package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// batchRequests mixes every algorithm, a key asked twice (the second sees
// the first), a look, costs that can never pass, a negative cost, the
// zero Limit, and buckets with a delay asked until they hold requests for
// their turn and then deny.
func batchRequests() []store.Request {
	key := func(name string) store.Key { return store.NewKey("storetest-batch", name) }
	delayed := func(alg limiter.Algorithm) limiter.Limit {
		l, err := must(alg, 10, sec, 1).WithDelay(250 * ms)
		if err != nil {
			panic(err)
		}
		return l
	}
	queue := store.Request{Key: key("queue"), Limit: delayed(limiter.LeakyBucket), Cost: 1}
	tokens := store.Request{Key: key("queue-token"), Limit: delayed(limiter.TokenBucket), Cost: 1}
	gcra := store.Request{Key: key("queue-gcra"), Limit: delayed(limiter.GCRA), Cost: 1}
	return []store.Request{
		queue, queue, tokens, gcra, queue, tokens, gcra, queue, gcra,
		{Key: key("fixed"), Limit: must(limiter.FixedWindow, 2, sec, 0), Cost: 1},
		{Key: key("fixed"), Limit: must(limiter.FixedWindow, 2, sec, 0), Cost: 1},
		{Key: key("sliding"), Limit: must(limiter.SlidingWindow, 3, sec, 0), Cost: 2},
		{Key: key("log"), Limit: must(limiter.SlidingLog, 3, sec, 0), Cost: 2},
		{Key: key("token"), Limit: must(limiter.TokenBucket, 10, sec, 3), Cost: 2},
		{Key: key("gcra"), Limit: must(limiter.GCRA, 10, sec, 3), Cost: 2},
		{Key: key("leaky"), Limit: must(limiter.LeakyBucket, 10, sec, 3), Cost: 2},
		{Key: key("gcra"), Limit: must(limiter.GCRA, 10, sec, 3), Cost: 0},
		{Key: key("never"), Limit: must(limiter.TokenBucket, 1, sec, 0), Cost: 5},
		{Key: key("negative"), Limit: must(limiter.FixedWindow, 2, sec, 0), Cost: -1},
		{Key: key("zero"), Limit: limiter.Limit{}, Cost: 1},
		{Key: key("log"), Limit: must(limiter.SlidingLog, 3, sec, 0), Cost: 1},
	}
}

// checkBatch sends the same requests as batches to a and one by one to b,
// at several times, and wants the same decisions from both.
func checkBatch(t *testing.T, a, b store.Store) {
	ctx := context.Background()
	reqs := batchRequests()
	if res, err := a.DecideEach(ctx, nil, nil, unaligned); err != nil || len(res) != 0 {
		t.Fatalf("DecideEach(no requests) = %v, %v; want no results, no error", res, err)
	}
	for _, at := range []time.Duration{0, 0, 150 * ms, 150 * ms, sec, hour} {
		now := unaligned.Add(at)
		got, err := a.DecideEach(ctx, nil, reqs, now)
		if err != nil {
			t.Fatalf("DecideEach at +%v: %v", at, err)
		}
		if len(got) != len(reqs) {
			t.Fatalf("DecideEach at +%v: %d results for %d requests", at, len(got), len(reqs))
		}
		for i, q := range reqs {
			want, err := b.Decide(ctx, q.Key, q.Limit, now, q.Cost)
			if err != nil {
				t.Fatalf("Decide %q at +%v: %v", q.Key, at, err)
			}
			if got[i].Err != nil || got[i].Decision != want {
				t.Errorf("at +%v request %d (%v, cost %d): batch gave %s, %v; one by one %s",
					at, i, q.Limit, q.Cost, format(got[i].Decision), got[i].Err, format(want))
			}
		}
	}
}

// checkConcurrent has 64 goroutines spend 4 requests each on one key at one
// instant (so nothing refills) under a limit of 100: exactly 100 pass, and
// each sees a different Remaining, 99 down to 0.
func checkConcurrent(t *testing.T, s store.Store, alg limiter.Algorithm) {
	const goroutines, attempts, rate = 64, 4, 100
	l := must(alg, rate, minute, 0)
	key := store.NewKey("storetest-concurrent", alg.String())
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		remaining = map[int64]int{}
		errs      []error
	)
	for range goroutines {
		wg.Go(func() {
			for range attempts {
				d, err := s.Decide(context.Background(), key, l, unaligned, 1)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else if d.Allowed {
					remaining[d.Remaining]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d errors, the first: %v", len(errs), errs[0])
	}
	allowed := 0
	for r, n := range remaining {
		allowed += n
		if n != 1 || r < 0 || r >= rate {
			t.Errorf("%d allowed requests saw Remaining %d", n, r)
		}
	}
	if allowed != rate {
		t.Errorf("%d of %d requests allowed, want %d", allowed, goroutines*attempts, rate)
	}
}

// checkClosed wants store.ErrClosed from a store used after Close.
func checkClosed(t *testing.T, s store.Store) {
	ctx := context.Background()
	l := must(limiter.GCRA, 1, sec, 0)
	if _, err := s.Decide(ctx, store.RawKey("k"), l, aligned, 1); err != nil {
		t.Fatalf("Decide before Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := s.Decide(ctx, store.RawKey("k"), l, aligned, 1); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Decide after Close: %v, want store.ErrClosed", err)
	}
	reqs := []store.Request{{Key: store.RawKey("k"), Limit: l, Cost: 1}}
	if res, err := s.DecideEach(ctx, nil, reqs, aligned); !errors.Is(err, store.ErrClosed) && !batchClosed(res) {
		t.Errorf("DecideEach after Close: %v, %v; want store.ErrClosed", res, err)
	}
}

// batchClosed reports whether every result of a batch is store.ErrClosed.
func batchClosed(res []store.Result) bool {
	for _, r := range res {
		if !errors.Is(r.Err, store.ErrClosed) {
			return false
		}
	}
	return len(res) > 0
}
