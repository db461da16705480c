package redis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// decideBatchNow runs the batch script for requests of costs on key at now
// (caller time) and returns their outcomes.
func decideBatchNow(s *Store, key string, l limiter.Limit, now time.Time, costs []int64) []outcome {
	c := s.newCall(store.RawKey(key), l, costs[0], now)
	batch := make([]*waiter, len(costs))
	for i, cost := range costs {
		batch[i] = &waiter{ctx: context.Background(), c: call{cost: min(cost, l.Burst()+1)}, by: time.Now().Add(s.timeout), done: make(chan outcome, 1)}
	}
	s.decideBatch(c, batch)
	out := make([]outcome, len(batch))
	for i, w := range batch {
		out[i] = <-w.done
	}
	return out
}

// TestBatchDifferential replays random batches (one to eight requests at
// one time, random costs) through the batch scripts and through
// limiter.Decide one request after another: every decision must be
// identical, as must the state a batch leaves for the next.
func TestBatchDifferential(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	for i, c := range diffCases() {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			l := mustLimit(t, c.alg, c.rate, c.period, c.burst)
			rng := rand.New(rand.NewPCG(*diffSeed, 1000+uint64(i)))
			key := "batchdiff:" + c.String()
			var m model
			var history strings.Builder
			now := c.start
			period := int64(l.Period() / time.Microsecond)
			p, n := l.Interval()
			for step := range *diffSteps / 2 {
				now = nextTime(rng, now, period, max(p/n, 1))
				costs := make([]int64, 1+rng.IntN(8))
				for j := range costs {
					costs[j] = nextCost(rng, l.Burst())
				}
				at := time.UnixMicro(now)
				got := decideBatchNow(s, key, l, at, costs)
				for j, cost := range costs {
					want := m.decide(l, at, cost)
					fmt.Fprintf(&history, "  step %d.%d: now %d cost %d -> %+v\n", step, j, now, cost, want)
					if got[j].err != nil || got[j].d != want {
						t.Fatalf("%v: step %d, request %d of %v (now %d µs):\n redis %+v (%v)\n go    %+v\nsteps so far (go):\n%s",
							l, step, j, costs, now, got[j].d, got[j].err, want, history.String())
					}
				}
			}
		})
	}
}

// TestBatchNoScript flushes the script cache: a batch must fall back to
// EVAL.
func TestBatchNoScript(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	l := mustLimit(t, limiter.GCRA, 3, time.Minute, 0)
	do(t, s, s.client.B().ScriptFlush().Build())
	got := decideBatchNow(s, "noscript", l, epoch, []int64{1, 1, 1, 1})
	for i, o := range got {
		if o.err != nil || o.d.Allowed != (i < 3) {
			t.Fatalf("request %d after SCRIPT FLUSH: %+v, %v; want allowed %v", i, o.d, o.err, i < 3)
		}
	}
}

// waitFor polls cond until it holds, for at most 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// waiting returns how many requests wait on key's calls in flight, or -1
// when nothing is in flight.
func (s *Store) waiting(key string) int {
	n, _ := s.keyState(key)
	return n
}

// keyState returns how many requests wait on key's calls in flight and
// how many calls are in flight, or -1, 0 when nothing is.
func (s *Store) keyState(key string) (waiting, flying int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.flights[key]
	if !ok {
		return -1, 0
	}
	return len(f.waiting), f.flying
}

// markFlight marks f in flight on its call's key, as the store's own, and returns
// the key.
func (s *Store) markFlight(f *flight) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flights[f.call.key] = f
	return f.call.key
}

// holdKey pauses Redis and starts keyFlights decisions on key, which stay
// in flight until resume is called; done receives their outcomes.
func holdKey(t *testing.T, srv *redistest.Server, s *Store, key string, l limiter.Limit) (done chan outcome, resume func()) {
	t.Helper()
	srv.Pause()
	var once sync.Once
	resume = func() { once.Do(srv.Resume) }
	t.Cleanup(resume)
	done = make(chan outcome, keyFlights)
	for range keyFlights {
		go func() {
			d, err := s.Decide(context.Background(), store.RawKey(key), l, epoch, 1)
			done <- outcome{d, err}
		}()
	}
	waitFor(t, "the first calls to be in flight", func() bool {
		w, f := s.keyState(redisKey(s.prefix, store.RawKey(key)))
		return w == 0 && f == keyFlights
	})
	return done, resume
}

// queue starts n requests on key, which a held call keeps waiting, and
// returns once all of them wait; their outcomes arrive on the channel.
func queue(ctx context.Context, t *testing.T, s *Store, key string, l limiter.Limit, n int) <-chan outcome {
	t.Helper()
	out := make(chan outcome, n)
	for range n {
		go func() {
			d, err := s.Decide(ctx, store.RawKey(key), l, epoch, 1)
			out <- outcome{d, err}
		}()
	}
	waitFor(t, fmt.Sprintf("%d requests to wait", n), func() bool { return s.waiting(redisKey(s.prefix, store.RawKey(key))) == n })
	return out
}

// TestCoalescing holds keyFlights calls on a key in flight (Redis paused)
// while ten more requests on the key arrive: they must wait, go together in
// one script call once Redis answers, and all be decided exactly as one
// after another (8 of 12 allowed under 8/m); the key is free once all have
// landed.
func TestCoalescing(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	l := mustLimit(t, limiter.FixedWindow, 8, time.Minute, 0)
	before := redistest.ScriptCalls(t, srv.Addr)
	first, resume := holdKey(t, srv, s, "hot", l)

	results := queue(context.Background(), t, s, "hot", l, 10)
	if _, f := s.keyState(redisKey(s.prefix, store.RawKey("hot"))); f != keyFlights {
		t.Errorf("%d calls in flight with ten requests waiting, want %d", f, keyFlights)
	}
	resume()

	// The held calls may reach Redis on connections of their own, so the
	// batch may run between them: which requests are allowed is Redis's
	// order, how many is not.
	allowed, remaining := 0, map[int64]bool{}
	for range keyFlights + 10 {
		var o outcome
		select {
		case o = <-first:
		case o = <-results:
		}
		if o.err != nil {
			t.Fatal(o.err)
		}
		if o.d.Allowed {
			allowed++
			remaining[o.d.Remaining] = true
		}
	}
	if allowed != 8 || len(remaining) != 8 || !remaining[0] || !remaining[7] {
		t.Errorf("%d of %d requests allowed, remaining %v; want 8, and every remaining from 7 to 0 once", allowed, keyFlights+10, remaining)
	}
	if calls := redistest.ScriptCalls(t, srv.Addr) - before; calls != keyFlights+1 {
		t.Errorf("%d requests took %d script calls, want %d (the held ones, then one batch)", keyFlights+10, calls, keyFlights+1)
	}
	if n := s.waiting(redisKey(s.prefix, store.RawKey("hot"))); n != -1 {
		t.Errorf("key still marked in flight (%d waiting) after every request was answered", n)
	}
}

// TestCoalescingCallerGone cancels some waiting requests: they get
// context.Canceled and are left out of the batch, so they spend nothing.
func TestCoalescingCallerGone(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	l := mustLimit(t, limiter.GCRA, 10, time.Minute, 0)
	first, resume := holdKey(t, srv, s, "gone", l)

	ctx, cancel := context.WithCancel(context.Background())
	waiting := queue(ctx, t, s, "gone", l, 3)
	cancel()
	for range 3 {
		if err := (<-waiting).err; !errors.Is(err, context.Canceled) {
			t.Errorf("waiting request whose caller left: error %v, want context.Canceled", err)
		}
	}
	resume()
	for range keyFlights {
		if o := <-first; o.err != nil {
			t.Fatalf("a first request: %+v, %v", o.d, o.err)
		}
	}
	if d := decide(t, s, store.RawKey("gone"), l, epoch, 1); d.Remaining != 9-keyFlights {
		t.Errorf("after %d requests and three that left: %+v, want remaining %d", keyFlights, d, 9-keyFlights)
	}
}

// TestCoalescingClose closes the store while requests wait: they get
// store.ErrClosed, and no goroutine is left (TestMain checks).
func TestCoalescingClose(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	l := mustLimit(t, limiter.TokenBucket, 10, time.Minute, 0)
	first, resume := holdKey(t, srv, s, "close", l)
	waiting := queue(context.Background(), t, s, "close", l, 3)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// Resume the held call only once Close has marked the store closed:
	// resumed earlier, the call ends first and the waiters go on as the
	// next batch, decided, before Close was even called.
	for deadline := time.Now().Add(10 * time.Second); !s.closed.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Close did not mark the store closed within 10s")
		}
	}
	resume()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	for range keyFlights {
		<-first
	}
	for range 3 {
		if err := (<-waiting).err; !errors.Is(err, store.ErrClosed) {
			t.Errorf("request waiting at Close: error %v, want store.ErrClosed", err)
		}
	}
}

// TestCoalescingOtherLimit marks a call in flight on a key (as the
// store's own, with one limit) and sends a request with another limit on
// it: the request must not wait to join (its script and numbers differ),
// but go at once, decided under its own limit.
func TestCoalescingOtherLimit(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	l := mustLimit(t, limiter.GCRA, 10, time.Minute, 0)
	c := s.newCall(store.RawKey("other"), l, 1, epoch)
	rk := s.markFlight(&flight{call: c, flying: keyFlights})
	d := decide(t, s, store.RawKey("other"), mustLimit(t, limiter.GCRA, 20, time.Minute, 0), epoch, 1)
	if !d.Allowed || d.Limit != 20 || d.Remaining != 19 {
		t.Errorf("request with another limit than the call in flight: %+v, want allowed under its own limit (20, 19 left)", d)
	}
	if n := s.waiting(rk); n != 0 {
		t.Errorf("a request with another limit joined the batch (%d waiting)", n)
	}
	s.mu.Lock()
	delete(s.flights, rk)
	s.mu.Unlock()
}

// TestCoalescingWaiterDeadline hangs Redis while requests wait for a call
// in flight: each must fail with the deadline Options.Timeout after it
// arrived, not after the call before it and then its own batch (twice the
// timeout).
func TestCoalescingWaiterDeadline(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	srv := redistest.StartServer(t)
	s, err := New(context.Background(), Options{Addrs: []string{srv.Addr}, Prefix: redistest.KeyPrefix(t), CallerTime: true, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := mustLimit(t, limiter.GCRA, 10, time.Minute, 0)
	first, resume := holdKey(t, srv, s, "deadline", l)
	start := time.Now()
	waiting := queue(context.Background(), t, s, "deadline", l, 3)
	for range 3 {
		o := <-waiting
		if took := time.Since(start); !errors.Is(o.err, context.DeadlineExceeded) || took > timeout*18/10 {
			t.Errorf("waiting request on a hung Redis: %v after %v; want the deadline after about %v", o.err, took, timeout)
		}
	}
	resume()
	for range keyFlights {
		<-first
	}
}

// TestCoalescingWaiterPastDeadline puts a waiter whose deadline has passed
// before one whose has not: the next batch leaves the first out, answering
// it with its deadline at once (it has no timer that would), and holds the
// second, whose call is not cut short by the first's deadline.
func TestCoalescingWaiterPastDeadline(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	l := mustLimit(t, limiter.GCRA, 10, time.Minute, 0)
	c := s.newCall(store.RawKey("past"), l, 1, epoch)
	late := &waiter{ctx: context.Background(), c: call{cost: 1}, by: time.Now().Add(-time.Millisecond), done: make(chan outcome, 1)}
	due := &waiter{ctx: context.Background(), c: call{cost: 1}, by: time.Now().Add(time.Minute), done: make(chan outcome, 1)}
	s.markFlight(&flight{call: c, flying: 1, waiting: []*waiter{late, due}})
	_, batch := s.next(c.key, false)
	if len(batch) != 1 || batch[0] != due {
		t.Fatalf("next batch %v, want only the waiter within its deadline", batch)
	}
	select {
	case o := <-late.done:
		if !errors.Is(o.err, context.DeadlineExceeded) {
			t.Errorf("waiter past its deadline: %v, want context.DeadlineExceeded", o.err)
		}
	default:
		t.Fatal("the waiter past its deadline was not answered")
	}
	s.decideBatch(c, batch)
	if o := <-due.done; o.err != nil || !o.d.Allowed || o.d.Remaining != 9 {
		t.Errorf("the waiter within its deadline: %+v, %v; want allowed, remaining 9", o.d, o.err)
	}
	if _, batch := s.next(c.key, false); batch != nil || s.waiting(c.key) != -1 {
		t.Errorf("after the last batch: %v, key still in flight: %v", batch, s.waiting(c.key) != -1)
	}
}

// TestCoalescingOneCallerDeadline: a batch holding a waiter whose caller's
// own deadline has passed (it left on it) decides the others: the batch's
// call ends by Options.Timeout from its waiters' arrival, never by one
// caller's deadline, which would fail every request of the batch.
func TestCoalescingOneCallerDeadline(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	l := mustLimit(t, limiter.FixedWindow, 5, time.Minute, 0)
	c := s.newCall(store.RawKey("one"), l, 1, epoch)
	short, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancel()
	by := time.Now().Add(s.timeout)
	batch := []*waiter{
		{ctx: short, c: call{cost: 1}, by: by, done: make(chan outcome, 1)},
		{ctx: context.Background(), c: call{cost: 1}, by: by, done: make(chan outcome, 1)},
		{ctx: context.Background(), c: call{cost: 2}, by: by, done: make(chan outcome, 1)},
	}
	s.decideBatch(c, batch)
	<-batch[0].done
	for i, want := range []int64{3, 1} {
		if o := <-batch[i+1].done; o.err != nil || !o.d.Allowed || o.d.Remaining != want {
			t.Errorf("waiter %d, its caller still there: %+v (%v), want allowed with %d left (not another caller's deadline)", i+1, o.d, o.err, want)
		}
	}
}

// TestCoalescingLastLands ends two calls in flight on a key with nothing
// waiting: the first to land must leave the key in flight, the second
// free it, so that a request arriving between them cannot go as a third.
func TestCoalescingLastLands(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	l := mustLimit(t, limiter.GCRA, 10, time.Minute, 0)
	c := s.newCall(store.RawKey("last"), l, 1, epoch)
	s.markFlight(&flight{call: c, flying: 2})
	if _, batch := s.next(c.key, false); batch != nil {
		t.Fatalf("first call landing with nothing waiting: batch %v", batch)
	}
	if w, f := s.keyState(c.key); w != 0 || f != 1 {
		t.Fatalf("after the first of two calls landed: %d waiting, %d in flight; want 0 waiting, 1 in flight", w, f)
	}
	s.next(c.key, false)
	if w, _ := s.keyState(c.key); w != -1 {
		t.Errorf("after both calls landed the key is still in flight (%d waiting)", w)
	}
}
