package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// do runs one raw command for a test and fails it on an error.
func do(t testing.TB, s *Store, cmd rueidis.Completed) rueidis.RedisResult {
	t.Helper()
	res := s.client.Do(context.Background(), cmd)
	if err := res.Error(); err != nil && !rueidis.IsRedisNil(err) {
		t.Fatal(err)
	}
	return res
}

// TestRedisTimeSharedCounter checks the one time authority: two stores on
// one Redis, reading Redis TIME, share each key's counter whatever now
// their callers pass. The period is long so that no window or refill can
// fall inside the test.
func TestRedisTimeSharedCounter(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	prefix := redistest.KeyPrefix(t)
	a := openPrefix(t, []string{srv.Addr}, false, prefix)
	b := openPrefix(t, []string{srv.Addr}, false, prefix)
	for _, alg := range limiter.Algorithms {
		l := mustLimit(t, alg, 5, 366*day, 0)
		passed := 0
		for i := range 10 {
			s, now := a, time.Time{} // a caller clock far in the past
			if i%2 == 1 {
				s, now = b, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC) // and one far ahead
			}
			if decide(t, s, store.RawKey("shared:"+alg.String()), l, now, 1).Allowed {
				passed++
			}
		}
		if passed != 5 {
			t.Errorf("%v: %d of 10 requests at 5 per period passed through two stores, want 5", alg, passed)
		}
	}
}

// TestNoScriptRecovery flushes the script cache between decisions: Decide,
// DecideEach and DecideAll must fall back to EVAL and keep the keys'
// state.
func TestNoScriptRecovery(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	for _, alg := range limiter.Algorithms {
		l := mustLimit(t, alg, 3, time.Minute, 0)
		key := "noscript:" + alg.String()
		decide(t, s, store.RawKey(key), l, epoch, 1)
		do(t, s, s.client.B().ScriptFlush().Build())
		if d := decide(t, s, store.RawKey(key), l, epoch, 1); d.Remaining != 1 {
			t.Fatalf("%v after SCRIPT FLUSH: %+v, want remaining 1", alg, d)
		}
		do(t, s, s.client.B().ScriptFlush().Build())
		res, err := s.DecideEach(context.Background(), nil, []store.Request{{Key: store.RawKey(key), Limit: l, Cost: 1}, {Key: store.RawKey(key + ":b"), Limit: l, Cost: 3}}, epoch)
		if err != nil || res[0].Err != nil || res[1].Err != nil {
			t.Fatalf("%v: DecideEach after SCRIPT FLUSH: %v %+v", alg, err, res)
		}
		if res[0].Decision.Remaining != 0 || res[1].Decision.Remaining != 0 || !res[1].Decision.Allowed {
			t.Fatalf("%v: DecideEach after SCRIPT FLUSH: %+v", alg, res)
		}
		do(t, s, s.client.B().ScriptFlush().Build())
		all := []store.Request{{Key: store.RawKey(key + ":c"), Limit: l, Cost: 1}, {Key: store.RawKey(key + ":d"), Limit: l, Cost: 2}}
		res, err = s.DecideAll(context.Background(), nil, all, epoch)
		if err != nil || res[0].Decision.Remaining != 2 || res[1].Decision.Remaining != 1 {
			t.Fatalf("%v: DecideAll after SCRIPT FLUSH: %v %+v", alg, err, res)
		}
	}
}

// TestTimeoutOnPausedServer freezes Redis: a decision must fail with the
// deadline soon after Timeout instead of hanging, and the store must work
// again once Redis does.
func TestTimeoutOnPausedServer(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s, err := New(context.Background(), Options{Addrs: []string{srv.Addr}, Prefix: redistest.KeyPrefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := mustLimit(t, limiter.GCRA, 100, time.Second, 0)
	waitDecide(t, s, "pause", l) // connected; retried, as 50ms can pass on a loaded machine

	srv.Pause()
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	start := time.Now()
	_, err = s.Decide(context.Background(), store.RawKey("pause"), l, epoch, 1)
	elapsed := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Fatalf("Decide on a paused server: error %v, want the deadline (and no cancellation)", err)
	}
	if !strings.HasPrefix(err.Error(), "redis store: eval gcra: ") {
		t.Errorf("error %q lacks its context", err)
	}
	// A generous bound: the point is that the call does not hang (about
	// 50ms in practice), not a latency measurement.
	if elapsed > 2*time.Second {
		t.Errorf("Decide on a paused server took %v with a %v timeout", elapsed, DefaultTimeout)
	}
	t.Logf("Decide on a paused server failed after %v (timeout %v)", elapsed, DefaultTimeout)
	res, err := s.DecideEach(context.Background(), nil, []store.Request{{Key: store.RawKey("pause"), Limit: l, Cost: 1}}, epoch)
	if err != nil || !errors.Is(res[0].Err, context.DeadlineExceeded) {
		t.Fatalf("DecideEach on a paused server: %v, %+v; want the deadline in the result", err, res)
	}

	srv.Resume()
	resumed = true
	waitDecide(t, s, "pause", l)
}

// waitDecide retries a decision until Redis answers again, for at most a
// few seconds: reconnecting takes a moment.
func waitDecide(t *testing.T, s *Store, key string, l limiter.Limit) limiter.Decision {
	t.Helper()
	var err error
	for range 200 {
		var d limiter.Decision
		if d, err = s.Decide(context.Background(), store.RawKey(key), l, epoch, 1); err == nil {
			return d
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("store never recovered: %v", err)
	return limiter.Decision{}
}

// TestReconnectAfterRestart kills Redis and starts it again: decisions fail
// while it is down and succeed after, on a server that has lost the scripts
// and the keys.
func TestReconnectAfterRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, false)
	l := mustLimit(t, limiter.TokenBucket, 10, time.Minute, 0)
	if d := decide(t, s, store.RawKey("restart"), l, epoch, 4); d.Remaining != 6 {
		t.Fatalf("first decision: %+v", d)
	}
	srv.Stop()
	if _, err := s.Decide(context.Background(), store.RawKey("restart"), l, epoch, 1); err == nil {
		t.Fatal("Decide succeeded with Redis stopped")
	}
	srv.Restart(t)
	if d := waitDecide(t, s, "restart", l); d.Remaining != 9 {
		t.Fatalf("after restart (no persistence, a fresh key): %+v, want remaining 9", d)
	}
}

// TestDecideEachMatchesDecide decides the same requests on two prefixes,
// in batches on one and one by one on the other: the decisions must agree.
func TestDecideEachMatchesDecide(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	batch := open(t, []string{srv.Addr}, true)
	single := open(t, []string{srv.Addr}, true)
	checkBatch(t, batch, single)
}

// checkBatch compares DecideEach on one store with Decide on another over
// rounds of requests on many keys, every algorithm, the zero Limit and a
// negative cost.
func checkBatch(t *testing.T, batch, single *Store) {
	t.Helper()
	var reqs []store.Request
	for _, alg := range limiter.Algorithms {
		l := mustLimit(t, alg, 4, time.Second, 0)
		for k := range 5 {
			reqs = append(reqs, store.Request{Key: store.RawKey(fmt.Sprintf("batch:%v:%d", alg, k)), Limit: l, Cost: int64(k % 3)})
		}
	}
	reqs = append(reqs, store.Request{Key: store.RawKey("zero")}, store.Request{Key: store.RawKey("neg"), Limit: reqs[0].Limit, Cost: -1})
	for round := range 6 {
		now := epoch.Add(time.Duration(round) * 150 * time.Millisecond)
		got, err := batch.DecideEach(context.Background(), nil, reqs, now)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range reqs {
			want := decide(t, single, r.Key, r.Limit, now, r.Cost)
			if got[i].Err != nil || got[i].Decision != want {
				t.Fatalf("round %d, %s: batch %+v, single %+v", round, r.Key, got[i], want)
			}
		}
	}
}
