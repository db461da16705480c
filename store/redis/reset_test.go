package redis

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// heardResets records what a store's WatchResets hears.
type heardResets struct {
	mu   sync.Mutex
	keys []store.Key
}

func (h *heardResets) forget(key store.Key) {
	h.mu.Lock()
	h.keys = append(h.keys, key)
	h.mu.Unlock()
}

func (h *heardResets) has(key store.Key) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range h.keys {
		if k == key {
			return true
		}
	}
	return false
}

// TestResetTellsEveryInstance: three stores on one prefix, each watching
// its resets. A reset through one deletes the key's rate and lease state
// (the next decision is fresh), every store hears the key, and the reset
// returns once all three confirmed. A store on another prefix hears
// nothing.
func TestResetTellsEveryInstance(t *testing.T) {
	srv := redistest.StartServer(t)
	testResetTellsEveryInstance(t, []string{srv.Addr})
}

func TestResetTellsEveryInstanceOnACluster(t *testing.T) {
	c := redistest.StartCluster(t)
	testResetTellsEveryInstance(t, c.Addrs)
}

func testResetTellsEveryInstance(t *testing.T, addrs []string) {
	prefix := redistest.KeyPrefix(t)
	var stores []*Store
	var heard []*heardResets
	for range 3 {
		s, h := openPrefix(t, addrs, false, prefix), &heardResets{}
		s.WatchResets(h.forget)
		stores, heard = append(stores, s), append(heard, h)
	}
	other, otherHeard := open(t, addrs, false), &heardResets{}
	other.WatchResets(otherHeard.forget)
	for i, h := range append(heard, otherHeard) { // subscribed: each forgot everything once
		waitFor(t, "subscription of store "+string(rune('0'+i)), func() bool { return h.has(store.RawKey("")) })
	}
	ctx := context.Background()
	l := mustLimit(t, limiter.SlidingWindow, 2, time.Minute, 0)
	key := store.GroupKey(store.Parts("client", "partner-a"), "claims", "sliding_window")
	for range 2 {
		decide(t, stores[1], key, l, epoch, 1)
	}
	if d := decide(t, stores[2], key, l, epoch, 1); d.Allowed {
		t.Fatalf("third request allowed before the reset: %+v", d)
	}
	lease := store.Concurrency{Max: 1, TTL: time.Minute}
	if d, err := stores[0].Acquire(ctx, key, lease, epoch, 1); err != nil || !d.Allowed {
		t.Fatalf("Acquire: %+v, %v", d, err)
	}
	if err := stores[0].Reset(ctx, key); err != nil {
		t.Fatalf("Reset: %v (want every instance to confirm)", err)
	}
	for i, h := range heard {
		if !h.has(key) {
			t.Errorf("store %d did not hear the reset before Reset returned", i)
		}
	}
	if d := decide(t, stores[2], key, l, epoch, 1); !d.Allowed || d.Remaining != 1 {
		t.Errorf("after Reset: %+v, want allowed with 1 remaining", d)
	}
	if d, err := stores[1].Acquire(ctx, key, lease, epoch, 1); err != nil || !d.Allowed || d.InFlight != 1 {
		t.Errorf("Acquire after Reset: %+v, %v; want allowed, 1 in flight (the old lease forgotten)", d, err)
	}
	time.Sleep(50 * time.Millisecond) // a message to the other prefix would have come by now
	if otherHeard.has(key) {
		t.Error("a store on another prefix heard the reset")
	}
}

// TestResetWithoutWatchers: a store that watches nothing still resets,
// and does not wait for confirmations it cannot hear.
func TestResetWithoutWatchers(t *testing.T) {
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, false)
	l := mustLimit(t, limiter.FixedWindow, 1, time.Minute, 0)
	decide(t, s, store.RawKey("k"), l, epoch, 1)
	if err := s.Reset(context.Background(), store.RawKey("k")); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if d := decide(t, s, store.RawKey("k"), l, epoch, 1); !d.Allowed {
		t.Errorf("after Reset: %+v, want allowed", d)
	}
	_ = s.Close()
	if err := s.Reset(context.Background(), store.RawKey("k")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Reset after Close: %v, want store.ErrClosed", err)
	}
}

// TestResetOfAnUnreadableKey: a reset announced with a key this version
// cannot read (an older instance's, during a rolling upgrade) makes the
// store forget every key (and it is confirmed, as any reset heard).
func TestResetOfAnUnreadableKey(t *testing.T) {
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, false)
	h := &heardResets{}
	s.WatchResets(h.forget)
	s.heard(rueidis.PubSubMessage{Message: "r nonce-1 6:claims9:partner-a"}) // the key as an older version wrote it
	if !h.has(store.Key{}) {
		t.Errorf("heard %v, want every key forgotten (the zero Key)", h.keys)
	}
}
