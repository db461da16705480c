package storeopen_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/config/storeopen"
	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
	"github.com/sluice-rl/sluice/store/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var onePerMinute = limiter.MustNew(limiter.FixedWindow, 1, time.Minute, 0)

func open(t *testing.T, sc config.Store, opts storeopen.Options) store.Store {
	t.Helper()
	st, err := storeopen.Open(context.Background(), sc, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func decide(t *testing.T, st store.Store, key string) (limiter.Decision, error) {
	t.Helper()
	return st.Decide(context.Background(), store.RawKey(key), onePerMinute, time.Now(), 1)
}

// No type, or memory, is the memory store, bounded as the settings say
// and keeping room for the Listed keys.
func TestOpenMemory(t *testing.T) {
	for _, typ := range []string{"", "memory"} {
		st := open(t, config.Store{Type: typ, MaxKeys: 1}, storeopen.Options{})
		mem, ok := st.(*memory.Store)
		if !ok {
			t.Fatalf("type %q: %T, want *memory.Store", typ, st)
		}
		listed := store.RawKey("listed").Listed()
		for _, key := range []store.Key{store.RawKey("a"), listed} {
			if d, err := mem.Decide(context.Background(), key, onePerMinute, time.Now(), 1); err != nil || !d.Allowed {
				t.Fatalf("type %q: first request on %s: %+v, %v", typ, key, d, err)
			}
		}
		if n := mem.Len(); n != 2 {
			t.Errorf("type %q: %d keys held, want 2 (one for max_keys 1, one reserved)", typ, n)
		}
	}
}

func TestOpenUnknownType(t *testing.T) {
	_, err := storeopen.Open(context.Background(), config.Store{Type: "etcd"}, storeopen.Options{})
	if err == nil || err.Error() != `storeopen: store type "etcd" (memory, redis or gossip)` {
		t.Fatalf("err = %v", err)
	}
}

// Two stores opened from the same Redis settings share one counter, as
// two gateway instances do, and every batch asked of Redis is observed.
func TestOpenRedisShares(t *testing.T) {
	srv := redistest.StartServer(t)
	sc := config.Store{Type: "redis", Redis: config.Redis{Addrs: []string{srv.Addr}, Prefix: redistest.KeyPrefix(t), Timeout: 5 * time.Second}}
	var observed atomic.Int64
	a := open(t, sc, storeopen.Options{ObserveShared: func(time.Duration) { observed.Add(1) }})
	b := open(t, sc, storeopen.Options{})
	if _, ok := a.(*failover.Store); !ok {
		t.Fatalf("%T, want *failover.Store", a)
	}
	if d, err := decide(t, a, "k"); err != nil || !d.Allowed {
		t.Fatalf("first request: %+v, %v", d, err)
	}
	if d, err := decide(t, b, "k"); err != nil || d.Allowed {
		t.Fatalf("second request, other instance: %+v, %v; want denied by the shared counter", d, err)
	}
	if observed.Load() == 0 {
		t.Error("ObserveShared was never called")
	}
}

// Redis down at start: Open still succeeds, on_failure decides (closed:
// unavailable; local: a local share of the limit), and the store counts
// in Redis once Redis answers.
func TestOpenRedisDownAtStart(t *testing.T) {
	srv := redistest.StartServer(t)
	srv.Stop()
	redisSettings := config.Redis{Addrs: []string{srv.Addr}, Prefix: redistest.KeyPrefix(t), Timeout: 5 * time.Second}
	closed := open(t, config.Store{Type: "redis", Redis: redisSettings, OnFailure: store.FailClosed}, storeopen.Options{})
	var unavailable *store.UnavailableError
	if _, err := decide(t, closed, "k"); !errors.As(err, &unavailable) {
		t.Fatalf("on_failure closed while Redis is down: err = %v, want *store.UnavailableError", err)
	}
	local := open(t, config.Store{Type: "redis", Redis: redisSettings, OnFailure: store.FailLocal, Instances: 1},
		storeopen.Options{Clock: clock.NewFake(time.Now())})
	if d, err := decide(t, local, "k"); err != nil || !d.Allowed {
		t.Fatalf("on_failure local, first request: %+v, %v", d, err)
	}
	if d, err := decide(t, local, "k"); err != nil || d.Allowed {
		t.Fatalf("on_failure local, second request: %+v, %v; want denied locally", d, err)
	}

	srv.Restart(t)
	fs := closed.(*failover.Store)
	for deadline := time.Now().Add(30 * time.Second); fs.Degraded(); { // an upper bound for the probe, not a timing assertion
		if time.Now().After(deadline) {
			t.Fatal("the store still decides by on_failure 30s after Redis came back")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d, err := decide(t, closed, "k"); err != nil || !d.Allowed {
		t.Fatalf("after Redis came back: %+v, %v", d, err)
	}
}
