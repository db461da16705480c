package redis

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
)

// openGrants returns a store with quota grants of max units for ttl on
// addrs under prefix, with caller time (the tables' clock) if callerTime,
// its sweeper on clk; closed when the test ends.
func openGrants(t testing.TB, addrs []string, prefix string, callerTime bool, max int64, ttl time.Duration, clk clock.Clock) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := New(ctx, Options{Addrs: addrs, Prefix: prefix, CallerTime: callerTime, Timeout: testTimeout, Clock: clk,
		Grant: GrantOptions{Max: max, TTL: ttl}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// grantStep is one decision of a grant table: at µs after epoch, a
// request of cost; want its answer, and the store's counters after it.
type grantStep struct {
	at      int64
	cost    int64
	allowed bool
	grants  int64 // GrantStats.Grants after the step
	saved   int64 // GrantStats.CallsSaved after the step
	left    int64 // units the key's grant holds after the step
}

// held returns the units the store's grant on key holds.
func held(s *Store, key store.Key) int64 {
	sh := s.grants.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.keys[key]; e != nil {
		return e.units
	}
	return 0
}

// TestGrantTables takes, spends and ends grants of 4 units under a limit
// of 10 for each algorithm granted, on a fake clock: a cold key is decided
// by one call per decision, a hot one takes 4 units in one call and
// admits them here, the last grant takes what is left (2), and no more
// than the limit is admitted.
func TestGrantTables(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	ms := int64(1000)
	steps := []grantStep{
		{at: 0, cost: 1, allowed: true},                          // cold: one call, 9 left in Redis
		{at: 1 * ms, cost: 1, allowed: true, grants: 1, left: 3}, // hot: a grant of 4, 5 left in Redis
		{at: 2 * ms, cost: 1, allowed: true, grants: 1, saved: 1, left: 2},
		{at: 3 * ms, cost: 2, allowed: true, grants: 1, saved: 2, left: 0},
		{at: 4 * ms, cost: 1, allowed: true, grants: 2, saved: 2, left: 3}, // 1 left in Redis
		{at: 5 * ms, cost: 3, allowed: true, grants: 2, saved: 3, left: 0},
		{at: 6 * ms, cost: 2, allowed: false, grants: 2, saved: 3, left: 0}, // 1 left, 2 asked: denied
		{at: 7 * ms, cost: 1, allowed: true, grants: 3, saved: 3, left: 0},  // as many as fit: 1
		{at: 8 * ms, cost: 1, allowed: false, grants: 3, saved: 3, left: 0},
	}
	for _, alg := range []limiter.Algorithm{limiter.FixedWindow, limiter.SlidingWindow, limiter.TokenBucket, limiter.GCRA, limiter.LeakyBucket} {
		t.Run(alg.String(), func(t *testing.T) {
			burst := int64(0)
			if alg.HasBurst() {
				burst = 10
			}
			l := mustLimit(t, alg, 10, time.Hour, burst)
			s := openGrants(t, []string{srv.Addr}, redistest.KeyPrefix(t), true, 4, time.Second, clock.NewFake(epoch))
			start := epoch.Truncate(time.Hour).Add(time.Hour) // a window's start
			for i, st := range steps {
				d := decide(t, s, store.RawKey("k"), l, start.Add(time.Duration(st.at)*time.Microsecond), st.cost)
				g := s.GrantStats()
				if d.Allowed != st.allowed || g.Grants.Load() != st.grants || g.CallsSaved.Load() != st.saved || held(s, store.RawKey("k")) != st.left {
					t.Fatalf("step %d (%+v): allowed %v, grants %d, saved %d, held %d", i, st, d.Allowed, g.Grants.Load(), g.CallsSaved.Load(), held(s, store.RawKey("k")))
				}
			}
		})
	}
}

// TestGrantReturn ends a grant with units unused: they go back when their
// window is still open (or, for a bucket, when no other request spent on
// the key since), and are counted as expired otherwise.
func TestGrantReturn(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	for _, tc := range []struct {
		alg      limiter.Algorithm
		period   time.Duration
		other    bool          // another store spends 1 on the key after the grant
		after    time.Duration // when the grant is swept, after it was taken
		returned int64         // units given back (of 3 unused)
		look     int64         // what a look at the key then sees remaining
	}{
		// 10 - 1 (cold) - 4 (grant) = 5; +3 back = 8.
		{alg: limiter.FixedWindow, period: time.Hour, after: 2 * time.Second, returned: 3, look: 8},
		// the other spends 1 (4 left); back: the count less 3, 7.
		{alg: limiter.FixedWindow, period: time.Hour, other: true, after: 2 * time.Second, returned: 3, look: 7},
		// the window (10s) ended at 10s: nothing goes back, a new window is full.
		{alg: limiter.FixedWindow, period: 10 * time.Second, after: 11 * time.Second, returned: 0, look: 10},
		{alg: limiter.SlidingWindow, period: time.Hour, after: 2 * time.Second, returned: 3, look: 8},
		{alg: limiter.SlidingWindow, period: time.Hour, other: true, after: 2 * time.Second, returned: 3, look: 7},
		// token_bucket of 10 per hour: 2s refill nothing (one token per 6 minutes).
		{alg: limiter.TokenBucket, period: time.Hour, after: 2 * time.Second, returned: 3, look: 8},
		// another request spent since: its reservation is the key's last, the grant's is not.
		{alg: limiter.TokenBucket, period: time.Hour, other: true, after: 2 * time.Second, returned: 0, look: 4},
		{alg: limiter.GCRA, period: time.Hour, after: 2 * time.Second, returned: 3, look: 8},
		{alg: limiter.GCRA, period: time.Hour, other: true, after: 2 * time.Second, returned: 0, look: 4},
		{alg: limiter.LeakyBucket, period: time.Hour, after: 2 * time.Second, returned: 3, look: 8},
		{alg: limiter.LeakyBucket, period: time.Hour, other: true, after: 2 * time.Second, returned: 0, look: 4},
	} {
		t.Run(fmt.Sprintf("%s_%v_other_%v", tc.alg, tc.period, tc.other), func(t *testing.T) {
			burst := int64(0)
			if tc.alg.HasBurst() {
				burst = 10
			}
			l := mustLimit(t, tc.alg, 10, tc.period, burst)
			prefix := redistest.KeyPrefix(t)
			clk := clock.NewFake(epoch)
			s := openGrants(t, []string{srv.Addr}, prefix, true, 4, time.Second, clk)
			plain := openPrefix(t, []string{srv.Addr}, true, prefix)
			start := epoch.Truncate(time.Hour).Add(time.Hour)
			decide(t, s, store.RawKey("k"), l, start, 1)
			if d := decide(t, s, store.RawKey("k"), l, start.Add(time.Millisecond), 1); !d.Allowed || held(s, store.RawKey("k")) != 3 {
				t.Fatalf("grant: %+v, held %d", d, held(s, store.RawKey("k")))
			}
			if tc.other {
				decide(t, plain, store.RawKey("k"), l, start.Add(2*time.Millisecond), 1)
			}
			at := start.Add(time.Millisecond + tc.after)
			s.sweepGrants(at, false)
			g := s.GrantStats()
			if g.UnitsReturned.Load() != tc.returned || g.UnitsExpired.Load() != 3-tc.returned || held(s, store.RawKey("k")) != 0 {
				t.Fatalf("returned %d, expired %d, held %d; want %d returned", g.UnitsReturned.Load(), g.UnitsExpired.Load(), held(s, store.RawKey("k")), tc.returned)
			}
			if d := decide(t, plain, store.RawKey("k"), l, at, 0); d.Remaining != tc.look {
				t.Fatalf("look after the return: remaining %d, want %d", d.Remaining, tc.look)
			}
		})
	}
}

// TestGrantNotGranted: sliding_log, a limit with a delay, looks and costs
// above Max are decided one call per decision.
func TestGrantNotGranted(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := openGrants(t, []string{srv.Addr}, redistest.KeyPrefix(t), true, 4, time.Second, clock.NewFake(epoch))
	delayed, err := mustLimit(t, limiter.TokenBucket, 10, time.Hour, 10).WithDelay(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		l    limiter.Limit
		cost int64
	}{
		{"sliding_log", mustLimit(t, limiter.SlidingLog, 10, time.Hour, 0), 1},
		{"delay", delayed, 1},
		{"look", mustLimit(t, limiter.FixedWindow, 10, time.Hour, 0), 0},
		{"above_max", mustLimit(t, limiter.FixedWindow, 10, time.Hour, 0), 5},
	} {
		for i := range 4 {
			decide(t, s, store.RawKey(tc.name), tc.l, epoch.Add(time.Duration(i)*time.Millisecond), tc.cost)
		}
		if g := s.GrantStats(); g.Grants.Load() != 0 || g.CallsSaved.Load() != 0 {
			t.Fatalf("%s: %d grants, %d calls saved", tc.name, g.Grants.Load(), g.CallsSaved.Load())
		}
	}
}

// TestGrantDecideAll: the rules of a request are answered from grants
// only when every key holds enough, and take grants all or nothing: a
// rule with no room leaves the others unspent.
func TestGrantDecideAll(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	prefix := redistest.KeyPrefix(t)
	s := openGrants(t, []string{srv.Addr}, prefix, true, 4, time.Second, clock.NewFake(epoch))
	plain := openPrefix(t, []string{srv.Addr}, true, prefix)
	wide := mustLimit(t, limiter.FixedWindow, 100, time.Hour, 0)
	narrow := mustLimit(t, limiter.FixedWindow, 6, time.Hour, 0)
	start := epoch.Truncate(time.Hour).Add(time.Hour)
	reqs := []store.Request{{Key: store.GroupKey("c", "wide"), Limit: wide, Cost: 1}, {Key: store.GroupKey("c", "narrow"), Limit: narrow, Cost: 1}}
	allowed := 0
	for i := range 10 {
		res, err := s.DecideAll(context.Background(), nil, reqs, start.Add(time.Duration(i)*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if res[1].Decision.Allowed && !res[0].Decision.Allowed {
			t.Fatalf("request %d: %+v: not all or nothing", i, res)
		}
		if res[1].Decision.Allowed {
			allowed++
		}
	}
	// Two requests decided as without grants (the keys were cold, then
	// one of them was), then a grant of 4 on each in one call (narrow at 2
	// of 6), three answered from the grants, then narrow has no room: the
	// grant call is denied and so is the request, spending nothing.
	look := func(r store.Request) int64 {
		return decide(t, plain, r.Key, r.Limit, start.Add(time.Second), 0).Remaining
	}
	if allowed != 6 || look(reqs[1]) != 0 || look(reqs[0])+held(s, reqs[0].Key) != 94 || s.GrantStats().CallsSaved.Load() != 6 {
		t.Fatalf("allowed %d; narrow remaining %d; wide remaining %d + held %d; %d calls saved", allowed, look(reqs[1]),
			look(reqs[0]), held(s, reqs[0].Key), s.GrantStats().CallsSaved.Load())
	}
}

// TestGrantInstances: a hot caller spread round-robin over three stores
// on one Redis (and on a Cluster) is admitted exactly its limit, in about
// one script call per Max decisions; a refusal while another store still
// holds unused units happens at most (3-1) × Max times.
func TestGrantInstances(t *testing.T) {
	t.Parallel()
	t.Run("standalone", func(t *testing.T) {
		t.Parallel()
		srv := redistest.StartServer(t)
		checkInstances(t, []string{srv.Addr}, func() int { return redistest.ScriptCalls(t, srv.Addr) })
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		c := redistest.StartCluster(t)
		checkInstances(t, c.Addrs, func() int { return redistest.ScriptCalls(t, c.Addrs...) })
	})
}

func checkInstances(t *testing.T, addrs []string, calls func() int) {
	const limit, max = 1000, 10
	for _, alg := range []limiter.Algorithm{limiter.FixedWindow, limiter.TokenBucket} {
		prefix := redistest.KeyPrefix(t)
		var stores [3]*Store
		for i := range stores {
			stores[i] = openGrants(t, addrs, prefix, true, max, time.Second, clock.NewFake(epoch))
		}
		burst := int64(0)
		if alg.HasBurst() {
			burst = limit
		}
		l := mustLimit(t, alg, limit, 24*time.Hour, burst)
		key := store.GroupKey("caller", "rule")
		before := calls()
		admitted, refusedHeld, decisions := 0, 0, 0
		start := epoch.Truncate(24 * time.Hour).Add(24 * time.Hour)
		for i := range 3 * limit / 2 {
			s := stores[i%3]
			d := decide(t, s, key, l, start.Add(time.Duration(i)*time.Microsecond), 1)
			if d.Allowed {
				admitted++
				decisions++
				continue
			}
			if held(stores[(i+1)%3], key)+held(stores[(i+2)%3], key) > 0 {
				refusedHeld++
			}
		}
		if admitted != limit || refusedHeld > 2*max {
			t.Fatalf("%s: admitted %d of %d, refused while units sat elsewhere %d (at most %d)", alg, admitted, limit, refusedHeld, 2*max)
		}
		// The admitted part: 3 cold calls, then one grant per 10 (a grant
		// may be partial at the end); the refusals cost one call each.
		if got := calls() - before; float64(got) > 0.1*float64(decisions)+6+float64(limit/2) {
			t.Fatalf("%s: %d script calls for %d admitted decisions", alg, got, decisions)
		}
	}
}

// TestGrantRedisGone: with Redis gone, the units a store holds are
// admitted, then on_failure decides (closed: 503).
func TestGrantRedisGone(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := openGrants(t, []string{srv.Addr}, redistest.KeyPrefix(t), false, 10, time.Minute, clock.Real{})
	fs, err := failover.New(failover.Options{Shared: s, OnFailure: store.FailClosed, Threshold: 1, ProbeInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fs.Close() })
	l := mustLimit(t, limiter.FixedWindow, 1000, 24*time.Hour, 0)
	ctx := context.Background()
	for range 2 { // cold, then a grant of 10: 9 left here
		if d, err := fs.Decide(ctx, store.RawKey("k"), l, time.Now(), 1); err != nil || !d.Allowed {
			t.Fatalf("%+v, %v", d, err)
		}
	}
	if held(s, store.RawKey("k")) != 9 {
		t.Fatalf("held %d, want 9", held(s, store.RawKey("k")))
	}
	srv.Stop()
	for i := range 9 {
		if d, err := fs.Decide(ctx, store.RawKey("k"), l, time.Now(), 1); err != nil || !d.Allowed {
			t.Fatalf("held unit %d: %+v, %v", i, d, err)
		}
	}
	_, err = fs.Decide(ctx, store.RawKey("k"), l, time.Now(), 1)
	var unavailable *store.UnavailableError
	if !errors.As(err, &unavailable) {
		t.Fatalf("after the held units: %v, want on_failure closed's 503", err)
	}
	// The circuit is open now: what is held still answers first.
	if _, err := fs.Decide(ctx, store.RawKey("k"), l, time.Now(), 1); !errors.As(err, &unavailable) {
		t.Fatalf("circuit open, nothing held: %v", err)
	}
}

// TestGrantWindowEnd: a window's grant ends with its window, whatever its
// TTL: its units are not admitted in the next window, where they were not
// counted.
func TestGrantWindowEnd(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	for _, alg := range []limiter.Algorithm{limiter.FixedWindow, limiter.SlidingWindow} {
		s := openGrants(t, []string{srv.Addr}, redistest.KeyPrefix(t), true, 4, MaxGrantTTL, clock.NewFake(epoch))
		l := mustLimit(t, alg, 10, 10*time.Second, 0)
		end := epoch.Truncate(time.Hour).Add(time.Hour) // a window's end
		decide(t, s, store.RawKey("k"), l, end.Add(-2*time.Millisecond), 1)
		decide(t, s, store.RawKey("k"), l, end.Add(-time.Millisecond), 1) // a grant of 4: 3 held
		if held(s, store.RawKey("k")) != 3 {
			t.Fatalf("%s: held %d", alg, held(s, store.RawKey("k")))
		}
		decide(t, s, store.RawKey("k"), l, end, 1)
		if g := s.GrantStats(); g.CallsSaved.Load() != 0 || g.Grants.Load() != 2 {
			t.Fatalf("%s: a decision at the window's end was answered from the grant before it (%d saved, %d grants)",
				alg, g.CallsSaved.Load(), g.Grants.Load())
		}
	}
}
