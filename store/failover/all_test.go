package failover_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
)

// rulesOf returns the requests of one HTTP request under two rules: a wide
// one and a narrow one (2 per minute).
func rulesOf(t *testing.T) []store.Request {
	return []store.Request{
		{Key: store.RawKey("wide"), Limit: must(t, limiter.GCRA, 10, time.Minute, 0), Cost: 1},
		{Key: store.RawKey("narrow"), Limit: must(t, limiter.FixedWindow, 2, time.Minute, 0), Cost: 1},
	}
}

// TestDecideAllGoesToTheSharedStore checks that DecideAll is one call of
// the shared store's DecideAll, and that a denied request is remembered
// with its other rule's decision: repeated within a second it is answered
// from memory, exactly as the shared store last answered it but for the
// time gone by; after a second the shared store is asked again.
func TestDecideAllGoesToTheSharedStore(t *testing.T) {
	f := newFixture(t, failover.Options{})
	reqs := rulesOf(t)
	var denied []store.Result
	for i := range 3 {
		res, err := f.fo.DecideAll(context.Background(), nil, reqs, f.clk.Now())
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if pass := i < 2; res[1].Decision.Allowed != pass || !res[0].Decision.Allowed {
			t.Fatalf("request %d: %+v, want narrow allowed=%v", i, res, pass)
		}
		denied = res
	}
	if got := f.shared.allCalls.Load(); got != 3 || f.shared.calls.Load() != 0 {
		t.Errorf("3 requests: %d DecideAll and %d DecideEach calls of the shared store, want 3 and 0", got, f.shared.calls.Load())
	}
	const later = 300 * time.Millisecond
	f.clk.Advance(later)
	res, err := f.fo.DecideAll(context.Background(), nil, reqs, f.clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := f.shared.allCalls.Load(); got != 3 {
		t.Errorf("the denied request repeated %v later reached the shared store (%d DecideAll calls, want 3)", later, got)
	}
	want := denied
	want[0].Decision.Reset -= later
	want[0].Decision.Refill -= later
	want[1].Decision.Reset -= later
	want[1].Decision.Refill -= later
	want[1].Decision.RetryAfter -= later
	if res[0] != want[0] || res[1] != want[1] {
		t.Errorf("repeated from memory:\n got  %+v\n want %+v", res, want)
	}
	if got := f.fo.Stats().CachedRejections.Load(); got != 1 {
		t.Errorf("CachedRejections %d, want 1", got)
	}
	f.clk.Advance(time.Second)
	if _, err := f.fo.DecideAll(context.Background(), nil, reqs, f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	if got := f.shared.allCalls.Load(); got != 4 {
		t.Errorf("a second on, the denied request was not asked again (%d DecideAll calls, want 4)", got)
	}
	// Another request (a different cost on the wide rule) is not the one
	// remembered.
	other := rulesOf(t)
	other[0].Cost = 2
	if _, err := f.fo.DecideAll(context.Background(), nil, other, f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	if got := f.shared.allCalls.Load(); got != 5 {
		t.Errorf("a different request was answered from memory (%d DecideAll calls, want 5)", got)
	}
}

// TestDecideAllFailure takes the shared store down: DecideAll answers by
// the failure policy (closed: 503), opens the circuit after Threshold
// failures, and then answers by the policy without reaching the shared
// store, as DecideEach does while degraded.
func TestDecideAllFailure(t *testing.T) {
	f := newFixture(t, failover.Options{OnFailure: store.FailClosed, Threshold: 2})
	reqs := rulesOf(t)
	f.shared.down.Store(true)
	for i := range 2 {
		_, err := f.fo.DecideAll(context.Background(), nil, reqs, f.clk.Now())
		var unavailable *store.UnavailableError
		if !errors.As(err, &unavailable) || !errors.Is(err, errDown) {
			t.Fatalf("failure %d: error %v, want *store.UnavailableError wrapping the shared store's", i, err)
		}
	}
	if !f.fo.Degraded() {
		t.Fatal("two failures with Threshold 2 did not open the circuit")
	}
	_, err := f.fo.DecideAll(context.Background(), nil, reqs, f.clk.Now())
	if unavailable := (*store.UnavailableError)(nil); !errors.As(err, &unavailable) || errors.Is(err, errDown) {
		t.Errorf("degraded: error %v, want *store.UnavailableError for the open circuit", err)
	}
	if got := f.shared.allCalls.Load(); got != 2 {
		t.Errorf("degraded DecideAll reached the shared store (%d calls, want 2)", got)
	}
}

// TestDecideAllCallerGone cancels the caller's context: the error says so,
// and it does not count against the shared store.
func TestDecideAllCallerGone(t *testing.T) {
	f := newFixture(t, failover.Options{Threshold: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.shared.down.Store(true)
	if _, err := f.fo.DecideAll(ctx, nil, rulesOf(t), f.clk.Now()); !errors.Is(err, context.Canceled) {
		t.Errorf("caller gone: error %v, want context.Canceled", err)
	}
	if f.fo.Degraded() {
		t.Error("a caller that left opened the circuit")
	}
}

// TestDecideAllWithAShadowDenialRemembered checks that a shadow rule's
// denial is not replayed as the request's: it stops nothing, so the
// request still goes to the shared store in one call.
func TestDecideAllWithAShadowDenialRemembered(t *testing.T) {
	f := newFixture(t, failover.Options{})
	reqs := rulesOf(t)
	reqs[1].Shadow = true
	for i := range 4 {
		res, err := f.fo.DecideAll(context.Background(), nil, reqs, f.clk.Now())
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if !res[0].Decision.Allowed || res[1].Decision.Allowed != (i < 2) {
			t.Fatalf("request %d: %+v", i, res)
		}
	}
	if got := f.shared.allCalls.Load(); got != 4 {
		t.Errorf("4 requests with a shadow rule: %d DecideAll calls, want 4", got)
	}
}
