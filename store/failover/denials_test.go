package failover_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
)

// step is one request of a time-step table: at a time since t0, a key, a
// cost and a limit, and what must come back.
type step struct {
	at        time.Duration
	key       string
	cost      int64
	limit     limiter.Limit
	allowed   bool
	retry     time.Duration // RetryAfter of a denial
	reset     time.Duration // -1: not checked
	calls     int64         // the shared store's DecideEach calls so far
	cached    int64         // Stats().CachedRejections so far
	reference string        // why
}

func runSteps(t *testing.T, f *fixture, steps []step) {
	t.Helper()
	for i, s := range steps {
		f.clk.Set(t0.Add(s.at))
		d, err := f.decide(s.key, s.limit, s.cost)
		if err != nil {
			t.Fatalf("step %d (%s): %v", i, s.reference, err)
		}
		if d.Allowed != s.allowed || (!s.allowed && d.RetryAfter != s.retry) || (s.reset >= 0 && d.Reset != s.reset) {
			t.Errorf("step %d (%s) at +%v: got allowed=%v retry=%v reset=%v, want allowed=%v retry=%v reset=%v",
				i, s.reference, s.at, d.Allowed, d.RetryAfter, d.Reset, s.allowed, s.retry, s.reset)
		}
		if got := f.shared.calls.Load(); got != s.calls {
			t.Errorf("step %d (%s): shared store called %d times in all, want %d", i, s.reference, got, s.calls)
		}
		if got := f.fo.Stats().CachedRejections.Load(); got != s.cached {
			t.Errorf("step %d (%s): %d cached rejections in all, want %d", i, s.reference, got, s.cached)
		}
	}
}

func TestCheapRejectionsAnswerLocallyUntilRetryAfter(t *testing.T) {
	f := newFixture(t, failover.Options{})
	two := must(t, limiter.FixedWindow, 2, 10*time.Second, 0) // window [t0, t0+10s)
	runSteps(t, f, []step{
		{at: 0, key: "a", cost: 1, limit: two, allowed: true, reset: 10 * time.Second, calls: 1, reference: "first of two"},
		{at: 0, key: "a", cost: 1, limit: two, allowed: true, reset: 10 * time.Second, calls: 2, reference: "second of two"},
		{at: time.Second, key: "a", cost: 1, limit: two, retry: 9 * time.Second, reset: 9 * time.Second, calls: 3,
			reference: "the shared store denies; the denial is remembered"},
		{at: time.Second, key: "a", cost: 1, limit: two, retry: 9 * time.Second, reset: 9 * time.Second, calls: 3, cached: 1,
			reference: "same key, cost and limit: answered locally"},
		{at: 4 * time.Second, key: "a", cost: 1, limit: two, retry: 6 * time.Second, reset: 6 * time.Second, calls: 3, cached: 2,
			reference: "RetryAfter and Reset shrink as time passes"},
		{at: 9999 * time.Millisecond, key: "a", cost: 1, limit: two, retry: time.Millisecond, reset: time.Millisecond, calls: 3, cached: 3,
			reference: "a millisecond before RetryAfter: still local"},
		{at: 10 * time.Second, key: "a", cost: 1, limit: two, allowed: true, reset: 10 * time.Second, calls: 4, cached: 3,
			reference: "RetryAfter has passed: the shared store is asked again, and admits"},
	})
}

func TestCheapRejectionsOnlyForTheSameCostAndLimit(t *testing.T) {
	f := newFixture(t, failover.Options{})
	two := must(t, limiter.FixedWindow, 2, 10*time.Second, 0)
	three := must(t, limiter.FixedWindow, 3, 10*time.Second, 0)
	runSteps(t, f, []step{
		{at: 0, key: "a", cost: 2, limit: two, allowed: true, reset: -1, calls: 1, reference: "spends the window"},
		{at: time.Second, key: "a", cost: 1, limit: two, retry: 9 * time.Second, reset: -1, calls: 2, reference: "denied by the shared store"},
		{at: time.Second, key: "a", cost: 1, limit: two, retry: 9 * time.Second, reset: -1, calls: 2, cached: 1, reference: "cached"},
		{at: time.Second, key: "a", cost: 1, limit: three, allowed: true, reset: -1, calls: 3, cached: 1,
			reference: "a new limit for the key (a reload) is not answered from the old denial"},
		{at: time.Second, key: "a", cost: 1, limit: two, retry: 9 * time.Second, reset: -1, calls: 3, cached: 2,
			reference: "the old limit's denial is still there"},
		{at: time.Second, key: "b", cost: 1, limit: two, allowed: true, reset: -1, calls: 4, cached: 2,
			reference: "another key is not denied by a's denial"},
		{at: 2 * time.Second, key: "a", cost: 2, limit: two, retry: 8 * time.Second, reset: -1, calls: 5, cached: 2,
			reference: "a different cost is asked of the shared store"},
	})
}

func TestCheapRejectionsOfACostNoLimitAllows(t *testing.T) {
	f := newFixture(t, failover.Options{})
	two := must(t, limiter.FixedWindow, 2, 10*time.Second, 0)
	runSteps(t, f, []step{
		{at: 0, key: "a", cost: 5, limit: two, retry: limiter.Never, reset: -1, calls: 1, reference: "cost above the limit: Never"},
		{at: 30 * time.Second, key: "a", cost: 5, limit: two, retry: limiter.Never, reset: -1, calls: 1, cached: 1,
			reference: "remembered for a minute, still Never"},
		{at: time.Minute, key: "a", cost: 5, limit: two, retry: limiter.Never, reset: -1, calls: 2, cached: 1,
			reference: "after a minute the shared store is asked again"},
		{at: time.Minute, key: "a", cost: 1, limit: two, allowed: true, reset: -1, calls: 3, cached: 1,
			reference: "a cost that fits is not refused by the Never"},
	})
}

// A batch whose first request is known to be denied sends only the second
// to the shared store, and the answers keep their order.
func TestCheapRejectionsInABatch(t *testing.T) {
	f := newFixture(t, failover.Options{})
	one := must(t, limiter.FixedWindow, 1, 10*time.Second, 0)
	for range 2 { // the second is denied by the shared store and remembered
		if _, err := f.decide("a", one, 1); err != nil {
			t.Fatal(err)
		}
	}
	asked := f.shared.asked.Load()
	res, err := f.fo.DecideEach(context.Background(), nil, []store.Request{
		{Key: store.RawKey("a"), Limit: one, Cost: 1},
		{Key: store.RawKey("b"), Limit: one, Cost: 1},
	}, f.clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Decision.Allowed || !res[1].Decision.Allowed || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("got %+v, want a denied and b allowed", res)
	}
	if got := f.shared.asked.Load() - asked; got != 1 {
		t.Errorf("the shared store was asked %d requests of the batch, want 1 (b only)", got)
	}
}

// MaxCached bounds the remembered denials: after more denied keys than it
// allows, most of them are asked of the shared store again.
func TestCheapRejectionsAreBounded(t *testing.T) {
	const maxCached, keys = 640, 5000
	f := newFixture(t, failover.Options{MaxCached: maxCached})
	one := must(t, limiter.FixedWindow, 1, 10*time.Second, 0)
	key := func(i int) string { return fmt.Sprintf("k%d", i) }
	for i := range keys { // each key: one admitted, one denied (remembered)
		for range 2 {
			if _, err := f.decide(key(i), one, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := f.fo.Stats().CachedRejections.Load(); got != 0 {
		t.Fatalf("%d cached rejections before any key was asked again", got)
	}
	for i := range keys {
		d, err := f.decide(key(i), one, 1)
		if err != nil || d.Allowed {
			t.Fatalf("key %d: got %+v, %v; want a denial", i, d, err)
		}
	}
	if got := f.fo.Stats().CachedRejections.Load(); got > maxCached {
		t.Errorf("%d of %d denied keys were still remembered, want at most MaxCached = %d", got, keys, maxCached)
	}
}

// A look (cost 0) at a key with a remembered denial is answered locally: it
// is allowed, and its Remaining is below the denied cost, so a caller
// checking several rules before spending sees no room without asking Redis.
func TestLookAtDeniedKeyAnsweredLocally(t *testing.T) {
	f := newFixture(t, failover.Options{})
	two := must(t, limiter.FixedWindow, 2, 10*time.Second, 0)
	runSteps(t, f, []step{
		{at: 0, key: "a", cost: 2, limit: two, allowed: true, reset: 10 * time.Second, calls: 1, reference: "both units"},
		{at: time.Second, key: "a", cost: 1, limit: two, retry: 9 * time.Second, reset: 9 * time.Second, calls: 2,
			reference: "denied and remembered"},
		{at: 2 * time.Second, key: "a", cost: 0, limit: two, allowed: true, reset: 8 * time.Second, calls: 2,
			reference: "a look: answered locally"},
		{at: 10 * time.Second, key: "a", cost: 0, limit: two, allowed: true, reset: 0, calls: 3,
			reference: "the denial has run out: the shared store is asked"},
	})
	d, err := f.decide("a", two, 0)
	if err != nil || d.Remaining != 2 {
		t.Fatalf("look after the window: %+v, %v; want Remaining 2", d, err)
	}
}

// TestCheapRejectionsOnlyUntilRefill: a remembered denial is the shared
// store's answer exactly until Remaining next grows (its Refill); after
// that its Remaining is stale and its Refill would say 0 on a denial, so
// the shared store is asked again, even though the denied cost still has
// to wait.
func TestCheapRejectionsOnlyUntilRefill(t *testing.T) {
	f := newFixture(t, failover.Options{})
	tb := must(t, limiter.TokenBucket, 1, time.Second, 4) // a token a second, 4 at most
	for i, st := range []struct {
		at            time.Duration
		cost          int64
		allowed       bool
		remaining     int64
		retry, refill time.Duration
		calls, cached int64
		reference     string
	}{
		{0, 3, true, 1, 0, time.Second, 1, 0, "3 of 4 spent"},
		{0, 3, false, 1, 2 * time.Second, time.Second, 2, 0, "denied by the shared store: 2 tokens missing, the next in 1s"},
		{500 * time.Millisecond, 3, false, 1, 1500 * time.Millisecond, 500 * time.Millisecond, 2, 1, "answered locally"},
		{1500 * time.Millisecond, 3, false, 2, 500 * time.Millisecond, 500 * time.Millisecond, 3, 1,
			"a token has come back since: the shared store is asked again"},
	} {
		f.clk.Set(t0.Add(st.at))
		d, err := f.decide("a", tb, st.cost)
		if err != nil {
			t.Fatalf("step %d (%s): %v", i, st.reference, err)
		}
		if d.Allowed != st.allowed || d.Remaining != st.remaining || d.RetryAfter != st.retry || d.Refill != st.refill {
			t.Errorf("step %d (%s): %+v, want allowed %v, remaining %d, retry %v, refill %v",
				i, st.reference, d, st.allowed, st.remaining, st.retry, st.refill)
		}
		if calls, cached := f.shared.calls.Load(), f.fo.Stats().CachedRejections.Load(); calls != st.calls || cached != st.cached {
			t.Errorf("step %d (%s): %d calls of the shared store, %d cached rejections; want %d, %d",
				i, st.reference, calls, cached, st.calls, st.cached)
		}
	}
}
