package redis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/storetest"
)

// TestSettleConformance runs the settle tables on a standalone Redis, with
// caller time (TestCluster runs them on a Redis Cluster).
func TestSettleConformance(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	storetest.RunSettle(t, func(t *testing.T) store.Store { return open(t, []string{srv.Addr}, true) })
}

// TestSettleInRedisTime: with Redis TIME, a decision's Reservation is in
// Redis's clock, so that a refund finds the reservation whatever the
// caller's clock says, and a charge gives the key a TTL of its new Reset.
func TestSettleInRedisTime(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, false)
	ctx := context.Background()
	for _, alg := range limiter.Algorithms {
		l := mustLimit(t, alg, 5, time.Hour, 0)
		key := "redistime:" + alg.String()
		d := decide(t, s, store.RawKey(key), l, time.Time{}, 5)
		if !d.Allowed || d.Reservation.At == 0 {
			t.Fatalf("%v: %+v, want allowed with a reservation", alg, d)
		}
		// The caller's clock is a year off: Redis's is the one that counts.
		got, err := s.Settle(ctx, store.RawKey(key), l, time.Now().Add(365*24*time.Hour), d.Reservation, 5, 1)
		if err != nil || got.Remaining != 4 {
			t.Errorf("%v: refund of 4 at Redis time: %+v, %v; want 4 remaining", alg, got, err)
		}
		if alg.HasBurst() {
			got, err = s.Settle(ctx, store.RawKey(key), l, time.Time{}, decide(t, s, store.RawKey(key), l, time.Time{}, 1).Reservation, 1, 4)
			ttl, _ := s.client.Do(ctx, s.client.B().Pttl().Key(redisKey(s.prefix, store.RawKey(key))).Build()).AsInt64()
			if err != nil || got.Remaining != 0 || ttl < int64(got.Reset/time.Millisecond)-1000 {
				t.Errorf("%v: charge of 3: %+v, %v, TTL %d ms; want 0 remaining and a TTL of its Reset", alg, got, err, ttl)
			}
		}
	}
}

// TestDifferentialSettle replays random decisions and settlements (mostly
// of the last reservation, sometimes of an earlier one, refunds and
// charges, bad costs) through limiter and the Redis store, with the limit
// changing now and then: every decision and every settlement's look must
// be identical.
func TestDifferentialSettle(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	for i, alg := range limiter.Algorithms {
		lims := caseLimits(t, alg)
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(*diffSeed, 7000+uint64(i)))
			for j, l := range lims {
				replaySettle(t, s, fmt.Sprintf("diffsettle:%v:%d", alg, j), []limiter.Limit{l, lims[(j+1)%len(lims)]}, rng, 2**diffSteps)
			}
		})
	}
}

// reserved is an admitted request, for settling or cancelling.
type reserved struct {
	r    limiter.Reservation
	cost int64
}

func replaySettle(t *testing.T, s *Store, key string, lims []limiter.Limit, rng *rand.Rand, steps int) {
	t.Helper()
	var m model
	var history strings.Builder
	var admitted []reserved
	now, l := epoch.UnixMicro(), lims[0]
	for step := range steps {
		if rng.IntN(20) == 0 {
			l = lims[rng.IntN(len(lims))]
		}
		now = nextTimeUnder(rng, now, l)
		at := time.UnixMicro(now)
		if len(admitted) > 0 && rng.IntN(3) == 0 {
			i := len(admitted) - 1
			if rng.IntN(3) == 0 {
				i = rng.IntN(len(admitted))
			}
			a := admitted[i]
			admitted = append(admitted[:i], admitted[i+1:]...)
			settleBoth(t, s, &m, key, l, at, a, rng, fmt.Sprintf("step %d", step), &history)
			continue
		}
		cost := nextCost(rng, l.Burst())
		want := m.decide(l, at, cost)
		got := decide(t, s, store.RawKey(key), l, at, cost)
		fmt.Fprintf(&history, "  step %d: %v now %d cost %d -> %+v\n", step, l, now, cost, want)
		if got != want {
			t.Fatalf("step %d under %v (now %d µs, cost %d):\n redis %+v\n go    %+v\nsteps so far (go):\n%s",
				step, l, now, cost, got, want, history.String())
		}
		if want.Reservation.At > 0 {
			admitted = append(admitted, reserved{want.Reservation, cost})
		}
	}
}

// settleBoth settles a on key through the Redis store and the model at
// now, at a random actual cost, and fails unless both settle alike.
func settleBoth(t *testing.T, s *Store, m *model, key string, l limiter.Limit, at time.Time, a reserved, rng *rand.Rand, step string, history *strings.Builder) {
	t.Helper()
	actual := []int64{0, a.cost - 1, a.cost + 1, a.cost + 3, -1, 1 << 40}[rng.IntN(6)]
	want := m.settle(l, at, a.r, a.cost, actual)
	got, err := s.Settle(context.Background(), store.RawKey(key), l, at, a.r, a.cost, actual)
	fmt.Fprintf(history, "  %s: %v now %d settle %+v of %d at %d -> %+v\n", step, l, at.UnixMicro(), a.r, a.cost, actual, want)
	if err != nil || got != want {
		t.Fatalf("%s: settle under %v of %+v, %d at %d:\n redis %+v (%v)\n go    %+v\nsteps so far (go):\n%s",
			step, l, a.r, a.cost, actual, got, err, want, history.String())
	}
}

// settle is what the Redis store does with a settlement: limiter.Settle on
// the key's state if it is held under l (a sliding_log's list under any
// limit), a look at it otherwise.
func (m *model) settle(l limiter.Limit, now time.Time, r limiter.Reservation, reserved, actual int64) limiter.Decision {
	held := m.limit.Same(&l) || m.limit.Algorithm() == limiter.SlidingLog && l.Algorithm() == limiter.SlidingLog
	if held && !m.isZero() {
		var d limiter.Decision
		m.state, d = limiter.Settle(l, m.copyState(), now, r, reserved, actual)
		m.limit = l
		return d
	}
	st := m.copyState()
	if !m.limit.IsZero() && !m.limit.Same(&l) && !held {
		st = limiter.Reinterpret(m.limit, l, st, now)
	}
	_, d := limiter.Settle(l, st, now, r, 0, 0)
	return d
}

func (m *model) isZero() bool { return m.state.A == 0 && m.state.B == 0 && len(m.state.Log) == 0 }
