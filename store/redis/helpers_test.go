package redis

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

func TestMain(m *testing.M) {
	// After a cluster topology refresh, rueidis closes the connections it
	// replaced five seconds later, in a goroutine of its own that the
	// client's Close does not wait for; it ends by itself. Likewise, after
	// a connection that failed as it opened (lazy_test.go's refuser), it
	// sleeps out the delay of a topology refresh in a goroutine that then
	// ends.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"))
}

// testTimeout is the stores' Timeout in tests: generous, as a loaded
// machine can stall a round trip for a second; only the tests of the
// timeout itself use the default.
const testTimeout = 10 * time.Second

// epoch is a realistic start time for time-step tables: 2023-11-14.
var epoch = time.UnixMicro(1_700_000_000_000_000)

// open returns a Store on addrs with its own key prefix, closed when the
// test ends.
func open(t testing.TB, addrs []string, callerTime bool) *Store {
	t.Helper()
	return openPrefix(t, addrs, callerTime, redistest.KeyPrefix(t))
}

// openPrefix is open with a given prefix, for stores that share keys.
func openPrefix(t testing.TB, addrs []string, callerTime bool, prefix string) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := New(ctx, Options{Addrs: addrs, Prefix: prefix, CallerTime: callerTime, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// decide calls s.Decide and fails the test on an error.
func decide(t testing.TB, s *Store, key store.Key, l limiter.Limit, now time.Time, cost int64) limiter.Decision {
	t.Helper()
	d, err := s.Decide(context.Background(), key, l, now, cost)
	if err != nil {
		t.Fatalf("Decide(%q, %v, %d, cost %d): %v", key, l, now.UnixMicro(), cost, err)
	}
	return d
}

// model is limiter.Decide with the state a store keeps: a denied request
// leaves the state alone, and an allowed one whose Reset is 0 leaves a
// fresh state (the Redis key is deleted). A state written under another
// limit is reinterpreted first, and kept so whatever the decision.
type model struct {
	state limiter.State
	limit limiter.Limit // the state was written under it
}

func (m *model) decide(l limiter.Limit, now time.Time, cost int64) limiter.Decision {
	rebased := m.rebase(l, now)
	d, next := limiter.Decide(l, m.copyState(), now, cost)
	m.keep(d, next, rebased)
	return d
}

// keep records what the store keeps of a decision d, which left next: an
// allowed one's state, none once Reset is 0 (the key is deleted), and for
// a denial the state as it was, unless it was rebased under a new limit
// for this decision: the store writes that state then, or deletes the key
// when its Reset is 0 (the state is as good as fresh).
func (m *model) keep(d limiter.Decision, next limiter.State, rebased bool) {
	switch {
	case d.Reset == 0 && (d.Allowed || rebased):
		m.state = limiter.State{}
	case d.Allowed:
		m.state = next
	}
}

// rebase reinterprets the model's state under l, if it was written under
// another limit, and reports whether the store writes the result, as it
// does for every algorithm but sliding_log, whose list is read under any
// limit as it is.
func (m *model) rebase(l limiter.Limit, now time.Time) bool {
	if m.limit.Same(&l) { // a changed delay is not a changed limit
		return false
	}
	m.state, m.limit = limiter.Reinterpret(m.limit, l, m.copyState(), now), l
	return l.Algorithm() != limiter.SlidingLog
}

// copyState returns the model's state with a Log of its own: Decide
// reuses the array, and a decision that is not kept must not touch ours.
func (m *model) copyState() limiter.State {
	s := m.state
	s.Log = append([]limiter.Entry(nil), s.Log...)
	return s
}

// mustLimit builds a limit or fails the test.
func mustLimit(t testing.TB, alg limiter.Algorithm, rate int64, period time.Duration, burst int64) limiter.Limit {
	t.Helper()
	l, err := limiter.New(alg, rate, period, burst)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
