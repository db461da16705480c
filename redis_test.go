package sluice_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-rl/sluice"
	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store/redis"
)

// Two limiters on two Redis stores, as two instances: they share one
// budget per key, and decide on Redis TIME, whatever their own clock
// reads (here a fake one decades ahead).
func TestRedisSharedOnRedisTime(t *testing.T) {
	srv := redistest.StartServer(t)
	prefix := redistest.KeyPrefix(t)
	skewed := clock.NewFake(time.Date(2090, 1, 1, 0, 0, 0, 0, time.UTC))
	open := func() *sluice.Limiter {
		st, err := redis.New(context.Background(), redis.Options{Addrs: []string{srv.Addr}, Prefix: prefix, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return sluice.New(limiter.MustNew(limiter.GCRA, 2, time.Minute, 2), sluice.Options{Store: st, Clock: skewed, Name: "partner-api"})
	}
	a, b := open(), open()
	ctx := context.Background()
	if !a.Allow(ctx, "k") || !b.Allow(ctx, "k") {
		t.Fatal("the first two requests were refused")
	}
	d, err := a.DecideN(ctx, "k", 1)
	if err != nil || d.Allowed {
		t.Fatalf("third request on the other instance: %+v, %v; want refused", d, err)
	}
	// Redis TIME has moved on by no more than the test's run since the
	// first request: the next one is due in at most 30s, and not much less.
	if d.RetryAfter > 30*time.Second || d.RetryAfter < 20*time.Second {
		t.Errorf("RetryAfter %v, want just under 30s (from Redis TIME)", d.RetryAfter)
	}

	r, err := b.Reserve(ctx, "k")
	if err != nil || !r.OK() || r.Decision().Delay < 20*time.Second {
		t.Fatalf("Reserve: %+v, %v; want a turn about 30s ahead", r, err)
	}
	if err := r.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	r2, err := a.Reserve(ctx, "k")
	if err != nil || r2.Decision().Delay > 30*time.Second {
		t.Fatalf("Reserve after Cancel: %+v, %v; want the given-back turn (at most 30s ahead)", r2, err)
	}

	wctx, cancel := context.WithTimeout(ctx, 20*time.Second) // the next turn is a minute ahead
	defer cancel()
	if err := b.Wait(wctx, "k"); !errors.Is(err, sluice.ErrDeadline) {
		t.Errorf("Wait = %v, want ErrDeadline at once", err)
	}
}
