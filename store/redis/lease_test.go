package redis

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/storetest"
)

// TestLeaseConformance runs the lease suite on a standalone Redis, with
// caller time so that the tables' clock is the one that counts. (The
// Cluster runs it in TestCluster.)
func TestLeaseConformance(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	storetest.RunLeases(t, func(t *testing.T) storetest.LeaseStore {
		return open(t, []string{srv.Addr}, true)
	})
}

// TestLeaseKeys: a lease key is never a rate key of the same store, and
// keeps the hash tag of its store key, so a group's leases and rate keys
// share a Cluster slot.
func TestLeaseKeys(t *testing.T) {
	for _, key := range []store.Key{store.NewKey("r", "c"), store.GroupKey("client", "r"), store.RawKey("{x}"), store.RawKey("lease:")} {
		lk, rk := leaseKey("sluice:", key), redisKey("sluice:", key)
		if lk == rk || hashTag(lk) != hashTag(rk) {
			t.Errorf("key %q: lease key %q, rate key %q: want different keys with one hash tag", key, lk, rk)
		}
	}
}

// TestLeasesConcurrentRedisTime: 64 goroutines, each with its own
// connection's share of a pipelined client, acquire on one key with room
// for 8 at Redis TIME: exactly 8 get a lease.
func TestLeasesConcurrentRedisTime(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	prefix := redistest.KeyPrefix(t)
	stores := []*Store{openPrefix(t, []string{srv.Addr}, false, prefix), openPrefix(t, []string{srv.Addr}, false, prefix)}
	limit := store.Concurrency{Max: 8, TTL: time.Minute}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		granted int
		errs    []error
	)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := stores[i%2].Acquire(context.Background(), store.RawKey("k"), limit, time.Time{}, 1)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else if d.Allowed {
				granted++
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 || granted != 8 {
		t.Fatalf("%d granted (want 8), errors %v", granted, errs)
	}
}

// TestLeasesOfADeadInstance: an instance holding every slot of a key dies
// (it stops renewing and never releases: a store closed with its leases
// held, its Renewer stopped); another instance sharing the Redis gets the
// slots back once the lease TTL has passed on Redis's clock, and not
// before. Time is Redis TIME throughout, read around each try, so the test
// asserts what happened at which Redis time, not how fast.
func TestLeasesOfADeadInstance(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	prefix := redistest.KeyPrefix(t)
	dead, live := openPrefix(t, []string{srv.Addr}, false, prefix), openPrefix(t, []string{srv.Addr}, false, prefix)
	ctx := context.Background()
	limit := store.Concurrency{Max: 3, TTL: 300 * time.Millisecond}
	renewer := store.NewRenewer(dead, store.RenewerOptions{Every: 100 * time.Millisecond})
	for range 3 {
		if d, err := renewer.Acquire(ctx, store.RawKey("partner"), limit, time.Time{}, 1); err != nil || !d.Allowed {
			t.Fatalf("acquire: %+v, %v", d, err)
		}
	}
	renewer.Close()
	first, last := expiries(t, live, "partner")
	dead.Close() // killed: nothing released
	for deadline := time.Now().Add(30 * time.Second); ; {
		before := redisTime(t, live)
		d, err := live.Acquire(ctx, store.RawKey("partner"), limit, time.Time{}, 0) // a look: how many are held
		after := redisTime(t, live)
		switch {
		case err != nil:
			t.Fatal(err)
		case after < first && d.InFlight != 3:
			t.Fatalf("%d in flight by %dµs, before the dead instance's first lease expired at %dµs", d.InFlight, after, first)
		case before >= last && d.InFlight != 0:
			t.Fatalf("%d in flight at %dµs, after the dead instance's last lease expired at %dµs", d.InFlight, before, last)
		case d.InFlight == 0:
			if d, err := live.Acquire(ctx, store.RawKey("partner"), limit, time.Time{}, 3); err != nil || !d.Allowed {
				t.Fatalf("every slot back, but %+v, %v", d, err)
			}
			return
		case time.Now().After(deadline):
			t.Fatalf("slots not back 30s after the leases expired (Redis time %dµs, last expiry %dµs)", before, last)
		}
		time.Sleep(20 * time.Millisecond) // polling Redis's clock, not standing in for synchronisation
	}
}

// TestLeaseKeyTTL: at Redis TIME a lease key expires with its latest
// lease, and goes when its last lease is released.
func TestLeaseKeyTTL(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, false)
	ctx := context.Background()
	key := leaseKey(s.prefix, store.RawKey("k"))
	short, err := s.Acquire(ctx, store.RawKey("k"), store.Concurrency{Max: 2, TTL: time.Minute}, time.Time{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	long, err := s.Acquire(ctx, store.RawKey("k"), store.Concurrency{Max: 2, TTL: time.Hour}, time.Time{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	pttl := func() int64 {
		v, err := s.client.Do(ctx, s.client.B().Pttl().Key(key).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if ms := pttl(); ms <= time.Minute.Milliseconds() || ms > time.Hour.Milliseconds() {
		t.Fatalf("PTTL %dms, want the hour lease's", ms)
	}
	for _, l := range []store.Lease{long.Lease, short.Lease} {
		if err := s.Release(ctx, l, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if ms := pttl(); ms != -2 {
		t.Fatalf("PTTL %d after every lease was released, want -2 (no key)", ms)
	}
}

// expiries returns the first and the last expiry (µs) of the leases on
// key.
func expiries(t *testing.T, s *Store, key string) (first, last int64) {
	t.Helper()
	cmd := s.client.B().Zrangebyscore().Key(leaseKey(s.prefix, store.RawKey(key))).Min("(0").Max("+inf").Withscores().Build()
	v, err := s.client.Do(context.Background(), cmd).AsZScores()
	if err != nil || len(v) == 0 {
		t.Fatalf("ZRANGEBYSCORE: %v, %v", v, err)
	}
	return int64(v[0].Score), int64(v[len(v)-1].Score)
}

// redisTime returns Redis TIME in µs.
func redisTime(t *testing.T, s *Store) int64 {
	t.Helper()
	v, err := s.client.Do(context.Background(), s.client.B().Time().Build()).AsIntSlice()
	if err != nil || len(v) != 2 {
		t.Fatalf("TIME: %v, %v", v, err)
	}
	return v[0]*1_000_000 + v[1]
}
