package failover_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
	"github.com/sluice-rl/sluice/store/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// t0 is the fake clock's start: on a 10-second boundary, so a 10s fixed
// window opened at t0 closes at t0+10s.
var t0 = time.Date(2025, 3, 14, 9, 26, 30, 0, time.UTC)

// errDown is the shared store's failure while it is down.
var errDown = errors.New("shared: connection refused")

// sharedStore stands in for Redis: a real memory store that counts the
// calls it receives and fails on demand.
type sharedStore struct {
	store.Store
	calls    atomic.Int64 // DecideEach calls
	allCalls atomic.Int64 // DecideAll calls
	asked    atomic.Int64 // requests in them
	down     atomic.Bool  // fail every call
	// perResult makes a failure come back as store/redis reports one: a
	// nil error and every Result carrying its Err.
	perResult atomic.Bool
}

func (s *sharedStore) Decide(ctx context.Context, key store.Key, l limiter.Limit, now time.Time, cost int64) (limiter.Decision, error) {
	res, err := s.DecideEach(ctx, nil, []store.Request{{Key: key, Limit: l, Cost: cost}}, now)
	if err != nil {
		return limiter.Decision{}, err
	}
	return res[0].Decision, res[0].Err
}

func (s *sharedStore) DecideEach(ctx context.Context, _ []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	s.calls.Add(1)
	s.asked.Add(int64(len(reqs)))
	if !s.down.Load() {
		return s.Store.DecideEach(ctx, nil, reqs, now)
	}
	if !s.perResult.Load() {
		return nil, errDown
	}
	out := make([]store.Result, len(reqs))
	for i := range out {
		out[i].Err = errDown
	}
	return out, nil
}

// DecideAll counts the calls and fails while down,
// deciding with the memory store's own DecideAll.
func (s *sharedStore) DecideAll(ctx context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	s.allCalls.Add(1)
	if s.down.Load() {
		return dst, errDown
	}
	return s.Store.DecideAll(ctx, dst, reqs, now)
}

// fixture is a failover store on a fake clock, its shared store and, for
// Local, its fallback.
type fixture struct {
	clk     *clock.Fake
	shared  *sharedStore
	fo      *failover.Store
	tickers atomic.Int64 // tickers the failover store made on its clock

	mu      sync.Mutex
	changes []bool // OnStateChange calls, in order
}

// newFixture builds a failover store from opts, filling in Shared,
// Fallback (for Local), Clock and OnStateChange; it is closed when the test
// ends.
func newFixture(t *testing.T, opts failover.Options) *fixture {
	t.Helper()
	f := &fixture{clk: clock.NewFake(t0)}
	f.shared = &sharedStore{Store: memory.New(memory.Options{Clock: f.clk})}
	opts.Shared, opts.Clock = f.shared, tickerCounter{f.clk, &f.tickers}
	if opts.OnFailure == store.FailLocal {
		opts.Fallback = memory.New(memory.Options{Clock: f.clk})
	}
	opts.OnStateChange = func(degraded bool) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.changes = append(f.changes, degraded)
	}
	fo, err := failover.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.fo = fo
	t.Cleanup(func() {
		if err := fo.Close(); err != nil {
			t.Error(err)
		}
	})
	return f
}

// tickerCounter is a clock that counts the tickers made on it, so a test
// can tell whether a store set anything to run on time by itself.
type tickerCounter struct {
	*clock.Fake
	n *atomic.Int64
}

func (c tickerCounter) NewTicker(d time.Duration) clock.Ticker {
	c.n.Add(1)
	return c.Fake.NewTicker(d)
}

// decide asks the failover store at the fake clock's time.
func (f *fixture) decide(key string, l limiter.Limit, cost int64) (limiter.Decision, error) {
	return f.fo.Decide(context.Background(), store.RawKey(key), l, f.clk.Now(), cost)
}

// transitions returns a copy of the OnStateChange calls so far.
func (f *fixture) transitions() []bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]bool(nil), f.changes...)
}

func must(t testing.TB, alg limiter.Algorithm, rate int64, period time.Duration, burst int64) limiter.Limit {
	t.Helper()
	l, err := limiter.New(alg, rate, period, burst)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
