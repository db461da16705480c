package httplimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
)

// tickClock is a fake clock that tells, on made, the interval of every
// ticker made: a held request makes one, so a test knows it is waiting.
type tickClock struct {
	*clock.Fake
	made chan time.Duration
}

func (c *tickClock) NewTicker(d time.Duration) clock.Ticker {
	t := c.Fake.NewTicker(d)
	c.made <- d
	return t
}

// delayed is a Limiter with a leaky_bucket 10/s burst 1 delay 300ms rule
// (and, with window, a sliding_window 100/m rule on the same path) on a
// memory store and a tickClock, in front of a handler that counts.
type delayed struct {
	clock   *tickClock
	mem     *memory.Store
	handler http.Handler
	mu      sync.Mutex
	served  int
	reports []httplimit.Report
}

func newDelayed(t *testing.T, window bool, st func(*memory.Store) store.Store) *delayed {
	t.Helper()
	d := &delayed{clock: &tickClock{Fake: clock.NewFake(epoch), made: make(chan time.Duration, 16)}}
	d.mem = memory.New(memory.Options{Clock: d.clock.Fake})
	t.Cleanup(func() { _ = d.mem.Close() })
	rules := []policy.Rule{{Name: "queue", Key: policy.KeySpec{Kind: policy.KeyIP}, Algorithm: limiter.LeakyBucket,
		Rate: rate(10, time.Second), Burst: 1, Delay: 300 * time.Millisecond}}
	if window {
		rules = append(rules, policy.Rule{Name: "window", Key: policy.KeySpec{Kind: policy.KeyIP}, Rate: rate(100, time.Minute)})
	}
	lim, err := httplimit.New(httplimit.Options{Policy: compile(t, policy.Policy{Rules: rules}), Store: st(d.mem), Clock: d.clock,
		OnDecision: func(_ *http.Request, rep *httplimit.Report) {
			d.mu.Lock()
			cp := *rep
			cp.Rules = append([]httplimit.RuleResult(nil), rep.Rules...)
			d.reports = append(d.reports, cp)
			d.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	d.handler = lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		d.mu.Lock()
		d.served++
		d.mu.Unlock()
	}))
	return d
}

func plainMemory(m *memory.Store) store.Store { return m }

// start sends a request in its own goroutine, under ctx; the recorder is
// complete once done is closed.
func (d *delayed) start(ctx context.Context) (*httptest.ResponseRecorder, chan struct{}) {
	w, done := httptest.NewRecorder(), make(chan struct{})
	r := httptest.NewRequest(http.MethodGet, "http://sluice.test/claims", nil).WithContext(ctx)
	go func() {
		defer close(done)
		d.handler.ServeHTTP(w, r)
	}()
	return w, done
}

func (d *delayed) last() httplimit.Report {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reports[len(d.reports)-1]
}

func waitDone(t *testing.T, done chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // an upper bound only
		t.Fatalf("%s: not answered", what)
	}
}

func (d *delayed) waitHeld(t *testing.T, want time.Duration) {
	t.Helper()
	select {
	case got := <-d.clock.made:
		if got != want {
			t.Fatalf("held for %v, want %v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request was not held")
	}
}

// TestDelayHoldsUntilItsTurn: a request over the bucket but within the
// delay waits on the Limiter's clock for its turn, then reaches the
// handler with the RateLimit headers of an allowed request; it is
// reported delayed, held 100ms. Beyond the delay: 429.
func TestDelayHoldsUntilItsTurn(t *testing.T) {
	d := newDelayed(t, false, plainMemory)
	ctx := context.Background()
	w, done := d.start(ctx)
	waitDone(t, done, "first")
	wantStatus(t, w, 200, "the first request")
	w, done = d.start(ctx)
	d.waitHeld(t, 100*time.Millisecond)
	d.clock.Advance(100 * time.Millisecond)
	waitDone(t, done, "held")
	wantStatus(t, w, 200, "the held request")
	if got := w.Header().Get("RateLimit"); got != `"queue";r=0;t=1` {
		t.Errorf("RateLimit %q, want r=0 and t=1 (room again within a second)", got)
	}
	rep := d.last()
	if rep.Held != 100*time.Millisecond || rep.Rules[0].Outcome != httplimit.Delayed || rep.Rules[0].Outcome.String() != "delayed" {
		t.Errorf("report: held %v, outcome %v; want 100ms, delayed", rep.Held, rep.Rules[0].Outcome)
	}
	// The bucket is full again (the held request's turn came) and 300ms
	// can queue 3: three are held, the fourth is refused.
	var dones []chan struct{}
	for i := range 3 {
		_, dn := d.start(ctx)
		d.waitHeld(t, time.Duration(i+1)*100*time.Millisecond)
		dones = append(dones, dn)
	}
	w, done = d.start(ctx)
	waitDone(t, done, "fourth")
	wantStatus(t, w, 429, "beyond the delay")
	if got := w.Header().Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After %q, want 1 (100ms until it could be held, rounded up)", got)
	}
	d.clock.Advance(300 * time.Millisecond)
	for _, dn := range dones {
		waitDone(t, dn, "queued")
	}
	if d.served != 5 {
		t.Errorf("handler served %d, want 5", d.served)
	}
}

// TestDelayCallerLeaves: a caller that leaves while held is let go at
// once, without the clock moving, and the handler never sees it. Its
// reservation is given back when it is the last one (the next request
// takes its turn, 100ms), not when a later one queued behind it (the next
// request queues behind both).
func TestDelayCallerLeaves(t *testing.T) {
	t.Run("memory", func(t *testing.T) { checkCallerLeaves(t, newDelayed(t, false, plainMemory)) })
	t.Run("redis", func(t *testing.T) {
		srv := redistest.StartServer(t)
		checkCallerLeaves(t, newDelayed(t, false, func(*memory.Store) store.Store { return newRedisStore(t, srv.Addr) }))
	})
}

func checkCallerLeaves(t *testing.T, d *delayed) {
	bg := context.Background()
	_, done := d.start(bg)
	waitDone(t, done, "first")

	ctx, cancel := context.WithCancel(bg)
	_, done = d.start(ctx)
	d.waitHeld(t, 100*time.Millisecond)
	cancel()
	waitDone(t, done, "left")
	if rep := d.last(); rep.Status != httplimit.StatusClientGone {
		t.Errorf("a caller that left: status %d, want %d", rep.Status, httplimit.StatusClientGone)
	}
	ctx, cancel = context.WithCancel(bg)
	_, first := d.start(ctx)
	d.waitHeld(t, 100*time.Millisecond) // its turn was given back: the same turn
	_, second := d.start(bg)
	d.waitHeld(t, 200*time.Millisecond)
	cancel() // not the last reservation: its turn goes unused
	waitDone(t, first, "left, not last")
	_, third := d.start(bg)
	d.waitHeld(t, 300*time.Millisecond)
	d.clock.Advance(300 * time.Millisecond)
	waitDone(t, second, "second")
	waitDone(t, third, "third")
	if d.served != 3 {
		t.Errorf("handler served %d, want 3 (the first, second and third)", d.served)
	}
}

// TestDelayWithAnotherRule: on a store that cannot decide rules all or
// nothing (memory), a request under a delay rule and a window rule is held
// and spends both; once the queue is full it is refused and the window
// rule spends nothing.
func TestDelayWithAnotherRule(t *testing.T) {
	d := newDelayed(t, true, plainMemory)
	ctx := context.Background()
	_, done := d.start(ctx)
	waitDone(t, done, "first")
	var dones []chan struct{}
	for i := range 3 {
		_, dn := d.start(ctx)
		d.waitHeld(t, time.Duration(i+1)*100*time.Millisecond)
		dones = append(dones, dn)
	}
	w, done := d.start(ctx)
	waitDone(t, done, "refused")
	wantStatus(t, w, 429, "queue full")
	rep := d.last()
	if rep.Rules[0].Outcome != httplimit.Limited || rep.Rules[1].Outcome != httplimit.NotSpent {
		t.Errorf("outcomes %v, %v; want limited, not_spent", rep.Rules[0].Outcome, rep.Rules[1].Outcome)
	}
	if got := w.Header().Get("RateLimit"); got != `"queue";r=0;t=1, "window";r=96;t=61` {
		t.Errorf("RateLimit %q: the window rule must show 4 spent (96 left)", got)
	}
	d.clock.Advance(300 * time.Millisecond)
	for _, dn := range dones {
		waitDone(t, dn, "queued")
	}
}

// TestDelayShadowHoldsNothing: a shadow rule with a delay counts a request
// as held (its cost reserved, reported delayed) but never holds it.
func TestDelayShadowHoldsNothing(t *testing.T) {
	clk := &tickClock{Fake: clock.NewFake(epoch), made: make(chan time.Duration, 16)}
	mem := memory.New(memory.Options{Clock: clk.Fake})
	defer mem.Close()
	for len(clk.made) > 0 {
		<-clk.made
	}
	p := policy.Policy{Rules: []policy.Rule{{Name: "queue", Key: policy.KeySpec{Kind: policy.KeyIP}, Algorithm: limiter.GCRA,
		Rate: rate(10, time.Second), Burst: 1, Delay: time.Second, Mode: policy.Shadow}}}
	var outcomes []httplimit.Outcome
	lim, err := httplimit.New(httplimit.Options{Policy: compile(t, p), Store: mem, Clock: clk,
		OnDecision: func(_ *http.Request, rep *httplimit.Report) { outcomes = append(outcomes, rep.Rules[0].Outcome) }})
	if err != nil {
		t.Fatal(err)
	}
	h := lim.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for range 3 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://sluice.test/claims", nil))
		wantStatus(t, w, 200, "a shadow rule's request")
	}
	if len(clk.made) != 0 {
		t.Errorf("a shadow rule held a request (%d tickers made)", len(clk.made))
	}
	if want := []httplimit.Outcome{httplimit.Allowed, httplimit.Delayed, httplimit.Delayed}; !slices.Equal(outcomes, want) {
		t.Errorf("outcomes %v, want %v", outcomes, want)
	}
}

// cancelThen is a memory store whose Cancel runs then once it has given a
// reservation back: another request can spend between the cancel and what
// the Limiter does after it.
type cancelThen struct {
	*memory.Store
	then func(key store.Key, l limiter.Limit)
}

func (c *cancelThen) Cancel(ctx context.Context, key store.Key, l limiter.Limit, r limiter.Reservation, cost int64) (bool, error) {
	ok, err := c.Store.Cancel(ctx, key, l, r, cost)
	c.then(key, l)
	return ok, err
}

// TestDelayCallerLeavesSettlesOnce: a held request under a rule that
// both delays and settles (count: failures), whose caller leaves, is given
// back once, by its cancel, and not refunded again after: a request that
// took the same turn in between keeps its reservation. Before, the settle
// step refunded the cancelled reservation too, and the bucket, back at the
// same point, gave the other request's turn away a second time.
func TestDelayCallerLeavesSettlesOnce(t *testing.T) {
	fake := clock.NewFake(epoch)
	mem := memory.New(memory.Options{Clock: fake})
	defer mem.Close()
	var between limiter.Decision
	var key store.Key
	var lim limiter.Limit
	st := &cancelThen{Store: mem, then: func(k store.Key, l limiter.Limit) {
		key, lim = k, l
		between, _ = mem.Decide(context.Background(), k, l, fake.Now(), 1)
	}}
	rule := policy.Rule{Name: "queue", Key: policy.KeySpec{Kind: policy.KeyGlobal}, Algorithm: limiter.LeakyBucket,
		Rate: rate(10, time.Second), Burst: 1, Delay: 300 * time.Millisecond, Count: policy.CountFailures}
	l, err := httplimit.New(httplimit.Options{Policy: compile(t, policy.Policy{Rules: []policy.Rule{rule}}), Store: st, Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	h := l.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) }))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil)) // a failure fills the bucket
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // held, its caller already gone: let go at once, without the clock moving
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
	if !between.Allowed || between.Delay != 100*time.Millisecond {
		t.Fatalf("the request between: %+v, want held 100ms (the cancelled turn)", between)
	}
	next, err := mem.Decide(context.Background(), key, lim, fake.Now(), 1)
	if err != nil || !next.Allowed || next.Delay != 200*time.Millisecond {
		t.Errorf("the next request: %+v %v, want held 200ms (behind the first and the one between)", next, err)
	}
}
