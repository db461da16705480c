package sluice_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-rl/sluice"
	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
	"github.com/sluice-rl/sluice/store/redis"
)

// keyedLimits are the limits of the keyed-API tests: 2 an hour per key,
// "big" 5 an hour of its own (Options.LimitFor). An hour's period keeps
// Redis TIME, which moves on during the test, from refilling anything.
var (
	twoAnHour  = limiter.MustNew(limiter.GCRA, 2, time.Hour, 2)
	fiveAnHour = limiter.MustNew(limiter.GCRA, 5, time.Hour, 5)
)

func bigOwnLimit(key string) (limiter.Limit, bool) { return fiveAnHour, key == "big" }

// TestKeyedMemory and TestKeyedRedis run checkKeyed on each store.
func TestKeyedMemory(t *testing.T) {
	st := memory.New(memory.Options{})
	t.Cleanup(func() { _ = st.Close() })
	checkKeyed(t, sluice.New(twoAnHour, sluice.Options{Store: st, Name: "keyed", LimitFor: bigOwnLimit}))
}

func TestKeyedRedis(t *testing.T) {
	srv := redistest.StartServer(t)
	st, err := redis.New(context.Background(), redis.Options{Addrs: []string{srv.Addr}, Prefix: redistest.KeyPrefix(t), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	checkKeyed(t, sluice.New(twoAnHour, sluice.Options{Store: st, Name: "keyed", LimitFor: bigOwnLimit}))
}

// checkKeyed: Peek looks without spending, Reset forgets one key (and
// only it), and a key LimitFor gives a limit of its own is held to it by
// every verb (Allow, Peek, Reserve's turns).
func checkKeyed(t *testing.T, lim *sluice.Limiter) {
	ctx := context.Background()
	peek := func(key string) limiter.Decision {
		t.Helper()
		d, err := lim.Peek(ctx, key)
		if err != nil {
			t.Fatalf("Peek(%q): %v", key, err)
		}
		return d
	}
	allow := func(key string, want ...bool) {
		t.Helper()
		for i, w := range want {
			if got := lim.Allow(ctx, key); got != w {
				t.Fatalf("Allow(%q) #%d = %v, want %v", key, i+1, got, w)
			}
		}
	}

	for range 5 { // looking spends nothing
		if d := peek("a"); !d.Allowed || d.Limit != 2 || d.Remaining != 2 {
			t.Fatalf("Peek of a fresh key: %v, want allowed limit=2 remaining=2", d)
		}
	}
	allow("a", true)
	if d := peek("a"); d.Remaining != 1 || d.Reset <= 0 {
		t.Errorf("Peek after one request: %v, want remaining=1 and a reset ahead", d)
	}
	allow("a", true, false)
	allow("b", true)
	if d := peek("a"); d.Remaining != 0 {
		t.Errorf("Peek of a spent key: %v, want remaining=0", d)
	}

	if err := lim.Reset(ctx, "a"); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if d := peek("a"); d.Remaining != 2 {
		t.Errorf("Peek after Reset: %v, want remaining=2 (afresh)", d)
	}
	if d := peek("b"); d.Remaining != 1 {
		t.Errorf("Peek of another key after Reset(a): %v, want remaining=1 (untouched)", d)
	}
	allow("a", true, true, false)

	if got := lim.LimitOf("big"); got != fiveAnHour {
		t.Errorf("LimitOf(big) = %v, want %v", got, fiveAnHour)
	}
	if got := lim.LimitOf("a"); got != twoAnHour {
		t.Errorf("LimitOf(a) = %v, want %v", got, twoAnHour)
	}
	if d := peek("big"); d.Limit != 5 || d.Remaining != 5 {
		t.Errorf("Peek(big): %v, want limit=5 remaining=5", d)
	}
	allow("big", true, true, true, true, true, false)
	// Reserve holds big for its turn under its own limit: one every 12
	// minutes (every 30 under New's).
	r, err := lim.Reserve(ctx, "big")
	if err != nil || !r.OK() {
		t.Fatalf("Reserve(big): %v, %v; want a turn", r, err)
	}
	if d := r.Delay(); d > 12*time.Minute || d < 11*time.Minute {
		t.Errorf("Reserve(big) turn in %v, want just under 12m (5 an hour)", d)
	}
}

// TestResetNeedsResetter: a store that cannot forget a key is told as
// ErrNoReset, not silently ignored.
func TestResetNeedsResetter(t *testing.T) {
	st := memory.New(memory.Options{})
	t.Cleanup(func() { _ = st.Close() })
	lim := sluice.New(twoAnHour, sluice.Options{Store: struct{ store.Store }{st}})
	if err := lim.Reset(context.Background(), "a"); !errors.Is(err, sluice.ErrNoReset) {
		t.Errorf("Reset on a store without Reset: %v, want ErrNoReset", err)
	}
}
