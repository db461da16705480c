package sluice_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice"
	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
	"github.com/sluice-rl/sluice/store/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var start = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// step is one call at a time on the fake clock (ms after start; it may go
// back), and what it must answer.
type step struct {
	at      int // ms after start
	op      string
	n       int64
	allowed bool
	wait    time.Duration // Reserve: Delay when granted; Decide: RetryAfter when denied
}

// newFake returns a limiter of limit over a memory store, both on one fake
// clock at start.
func newFake(t *testing.T, limit limiter.Limit) (*sluice.Limiter, *clock.Fake) {
	t.Helper()
	fake := clock.NewFake(start)
	st := memory.New(memory.Options{Clock: fake})
	t.Cleanup(func() { _ = st.Close() })
	return sluice.New(limit, sluice.Options{Store: st, Clock: fake}), fake
}

func runSteps(t *testing.T, limit limiter.Limit, steps []step) {
	t.Helper()
	lim, fake := newFake(t, limit)
	ctx := context.Background()
	for i, s := range steps {
		fake.Set(start.Add(time.Duration(s.at) * time.Millisecond))
		var allowed bool
		var wait time.Duration
		switch s.op {
		case "allow":
			allowed = lim.AllowN(ctx, "k", s.n)
		case "decide":
			d, err := lim.DecideN(ctx, "k", s.n)
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			allowed, wait = d.Allowed, d.RetryAfter
		case "reserve":
			r, err := lim.ReserveN(ctx, "k", s.n)
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			allowed, wait = r.OK(), r.Delay()
		}
		if allowed != s.allowed || wait != s.wait {
			t.Errorf("step %d (%s n=%d at %dms): allowed=%v wait=%v, want allowed=%v wait=%v",
				i, s.op, s.n, s.at, allowed, wait, s.allowed, s.wait)
		}
	}
}

// token_bucket 10/s burst 2: one token back every 100ms (in units: a
// request is 100ms of refill), the bucket full at 2.
func TestTokenBucketSteps(t *testing.T) {
	runSteps(t, limiter.MustNew(limiter.TokenBucket, 10, time.Second, 2), []step{
		{0, "allow", 1, true, 0},            // 2 -> 1 token
		{0, "allow", 1, true, 0},            // 1 -> 0
		{0, "decide", 1, false, 100 * ms},   // the next token in 100ms
		{0, "reserve", 1, true, 100 * ms},   // takes that token ahead: 0 -> -1, its turn in 100ms
		{0, "decide", 1, false, 100 * ms},   // (the bucket reads full: RetryAfter is when it is below full, not the turn)
		{0, "reserve", 1, true, 200 * ms},   // queues behind: -1 -> -2, its turn in 200ms
		{250, "allow", 1, false, 0},         // -2 + 2.5 = 0.5: not a whole token
		{250, "decide", 1, false, 50 * ms},  // a whole one in 50ms
		{300, "allow", 1, true, 0},          // 1 -> 0
		{100, "decide", 1, false, 100 * ms}, // the clock went back: no refill, nothing given back twice
		{400, "allow", 1, true, 0},          // 1 token refilled since 300ms
		{400, "allow", 3, false, 0},         // more than the burst: never
		{400, "decide", 3, false, limiter.Never},
		{400, "reserve", 3, false, limiter.Never},
		{10_000, "allow", 0, true, 0}, // a look
		{10_000, "reserve", 2, true, 0},
	})
}

// A window algorithm cannot hold a request for its turn: Reserve grants
// only what passes at once.
func TestFixedWindowSteps(t *testing.T) {
	runSteps(t, limiter.MustNew(limiter.FixedWindow, 2, time.Minute, 0), []step{
		{0, "reserve", 1, true, 0},
		{30_000, "allow", 1, true, 0},
		{30_000, "reserve", 1, false, limiter.Never},
		{30_000, "decide", 1, false, 30 * time.Second}, // the window ends at 60s
		{60_000, "allow", 2, true, 0},
	})
}

// The zero Limit allows nothing and never errs; a negative cost is refused.
func TestZeroLimitAndNegativeCost(t *testing.T) {
	runSteps(t, limiter.Limit{}, []step{
		{0, "allow", 1, false, 0},
		{0, "decide", 1, false, limiter.Never},
		{0, "reserve", 1, false, limiter.Never},
	})
	runSteps(t, limiter.MustNew(limiter.GCRA, 1, time.Second, 1), []step{{0, "allow", -1, false, 0}})
}

const ms = time.Millisecond

// Limiters of different names on one store count apart; of one name,
// together.
func TestNamesOnOneStore(t *testing.T) {
	st := memory.New(memory.Options{})
	defer st.Close()
	limit := limiter.MustNew(limiter.FixedWindow, 1, time.Hour, 0)
	a := sluice.New(limit, sluice.Options{Store: st, Name: "a"})
	b := sluice.New(limit, sluice.Options{Store: st, Name: "b"})
	a2 := sluice.New(limit, sluice.Options{Store: st, Name: "a"})
	ctx := context.Background()
	if !a.Allow(ctx, "k") || !b.Allow(ctx, "k") || a2.Allow(ctx, "k") || !a.Allow(ctx, "other") {
		t.Error("want a and b to count apart and a and a2 together, per key")
	}
	if err := a.Close(); err != nil { // not its store: left open
		t.Fatal(err)
	}
	if !b.Allow(ctx, "k2") {
		t.Error("closing a limiter closed a store it was given")
	}
}

// When the store cannot decide, Allow answers by OnFailure and reports the
// error to OnError; Decide, Reserve and Wait return it.
func TestStoreFailure(t *testing.T) {
	st := memory.New(memory.Options{})
	_ = st.Close() // every call now fails with store.ErrClosed
	limit := limiter.MustNew(limiter.GCRA, 1, time.Second, 1)
	var seen []error
	open := sluice.New(limit, sluice.Options{Store: st, OnError: func(err error) { seen = append(seen, err) }})
	closed := sluice.New(limit, sluice.Options{Store: st, OnFailure: store.FailClosed})
	ctx := context.Background()
	if !open.Allow(ctx, "k") || closed.Allow(ctx, "k") {
		t.Error("want fail open to allow and fail closed to refuse")
	}
	if len(seen) != 1 || !errors.Is(seen[0], store.ErrClosed) {
		t.Errorf("OnError saw %v, want [store.ErrClosed]", seen)
	}
	if _, err := open.DecideN(ctx, "k", 1); !errors.Is(err, store.ErrClosed) {
		t.Errorf("DecideN: %v", err)
	}
	if _, err := open.Reserve(ctx, "k"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Reserve: %v", err)
	}
	if err := open.Wait(ctx, "k"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Wait: %v", err)
	}
}

// A limiter without a Store makes a memory store, which Close closes with
// its sweeper (goleak checks it is gone).
func TestOwnStoreClosed(t *testing.T) {
	lim := sluice.New(limiter.MustNew(limiter.SlidingWindow, 1, time.Minute, 0), sluice.Options{})
	if !lim.Allow(context.Background(), "k") || lim.Allow(context.Background(), "k") {
		t.Error("want one request a minute")
	}
	if err := lim.Close(); err != nil {
		t.Fatal(err)
	}
	if lim.Allow(context.Background(), "k2") != true { // fails open on a closed store
		t.Error("a closed limiter's Allow should fail open")
	}
}

// A store that refuses while it cannot decide (on_failure: closed behind
// the failover store) is obeyed whatever OnFailure says, as httplimit
// obeys it.
func TestStoreUnavailableRefuses(t *testing.T) {
	shared := memory.New(memory.Options{})
	fs, err := failover.New(failover.Options{Shared: shared, OnFailure: store.FailClosed})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	_ = shared.Close() // the shared store is gone: every call fails
	var seen []error
	lim := sluice.New(limiter.MustNew(limiter.GCRA, 1, time.Second, 1), sluice.Options{Store: fs, OnError: func(err error) { seen = append(seen, err) }})
	for i := range 5 { // through the failover's circuit opening
		if lim.Allow(context.Background(), "k") {
			t.Fatalf("request %d allowed while the store asks for refusals (%v)", i, seen)
		}
	}
}

// TestZeroLimiterRefuses: the zero Limiter refuses in every method, and
// nothing panics.
func TestZeroLimiterRefuses(t *testing.T) {
	var l sluice.Limiter
	ctx := context.Background()
	if l.Allow(ctx, "k") || l.AllowN(ctx, "k", 0) || l.AllowOnError(errors.New("down")) {
		t.Error("the zero Limiter allowed")
	}
	for name, decide := range map[string]func() (limiter.Decision, error){
		"DecideN": func() (limiter.Decision, error) { return l.DecideN(ctx, "k", 1) },
		"Peek":    func() (limiter.Decision, error) { return l.Peek(ctx, "k") },
	} {
		if d, err := decide(); err != nil || d.Allowed || d.RetryAfter != limiter.Never {
			t.Errorf("%s: %+v, %v; want denied for ever, no error", name, d, err)
		}
	}
	for name, reserve := range map[string]func() (*sluice.Reservation, error){
		"Reserve":  func() (*sluice.Reservation, error) { return l.Reserve(ctx, "k") },
		"ReserveN": func() (*sluice.Reservation, error) { return l.ReserveN(ctx, "k", 0) },
	} {
		r, err := reserve()
		if err != nil || r.OK() || r.Delay() != limiter.Never || r.Decision().RetryAfter != limiter.Never || r.Cancel(ctx) != nil {
			t.Errorf("%s: %+v, %v; want no turn, no error", name, r, err)
		}
	}
	if err := l.Wait(ctx, "k"); !errors.Is(err, sluice.ErrNever) {
		t.Errorf("Wait: %v, want sluice.ErrNever", err)
	}
	if err := l.WaitN(ctx, "k", 0); !errors.Is(err, sluice.ErrNever) {
		t.Errorf("WaitN: %v, want sluice.ErrNever", err)
	}
	if err := l.Reset(ctx, "k"); !errors.Is(err, sluice.ErrNoReset) {
		t.Errorf("Reset: %v, want sluice.ErrNoReset", err)
	}
	if !l.Limit().IsZero() || !l.LimitOf("k").IsZero() || l.Name() != "default" {
		t.Errorf("Limit %v, LimitOf %v, Name %q; want the zero Limit and default", l.Limit(), l.LimitOf("k"), l.Name())
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
