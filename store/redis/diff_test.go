package redis

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// diffCase is a limit to replay random steps through, from a start time.
type diffCase struct {
	alg    limiter.Algorithm
	rate   int64
	period time.Duration
	burst  int64
	start  int64 // µs since the epoch
}

const (
	day     = 24 * time.Hour
	maxTime = int64(1) << 52
)

// The differential test's seed and length: fixed by default, so that a
// failure reproduces; other seeds and longer runs explore further, as in
//
//	go test -run TestDifferential -diff.seed 7 -diff.steps 1000 ./store/redis/
var (
	diffSeed  = flag.Uint64("diff.seed", 42, "seed of TestDifferential's random steps")
	diffSteps = flag.Int("diff.steps", 100, "steps per case of TestDifferential (135 cases)")
)

// diffCases returns the limits of the differential test for every
// algorithm: tiny and huge rates, periods from 1ms to 366 days, bursts
// below and above the rate, and the largest exact gcra burst of a 366-day
// period, from a realistic time and from the edges of the time range.
func diffCases() []diffCase {
	type lim struct {
		rate   int64
		period time.Duration
		burst  int64
	}
	windows := []lim{{7, time.Second, 0}, {3, 10 * time.Millisecond, 0}, {1, 366 * day, 0}, {1_000_000_000, time.Millisecond, 0}, {100, time.Minute, 0}, {5, time.Second, 0}}
	// sliding_log also with logs long enough that expiring and retrying
	// read them in several chunks.
	logs := []lim{{5, time.Second, 0}, {7, time.Second, 0}, {3, 10 * time.Millisecond, 0}, {1, 366 * day, 0}, {10_000, time.Millisecond, 0}, {100, time.Minute, 0},
		{200, 10 * time.Millisecond, 0}, {1000, 100 * time.Millisecond, 0}}
	buckets := []lim{{7, time.Second, 0}, {3, 10 * time.Millisecond, 0}, {1, 366 * day, 0}, {1, 366 * day, 284},
		{1_000_000_000, time.Millisecond, 1_000_000_000}, {1_000_000_000, time.Millisecond, 3}, {10, time.Second, 3},
		{3, 7 * time.Millisecond, 10}, {100, time.Minute, 0}}
	var cases []diffCase
	for _, alg := range limiter.Algorithms {
		lims := windows
		switch {
		case alg == limiter.SlidingLog:
			lims = logs
		case alg.HasBurst():
			lims = buckets
		}
		for _, l := range lims {
			for _, start := range []int64{epoch.UnixMicro(), 0, maxTime - int64(l.period/time.Microsecond)} {
				cases = append(cases, diffCase{alg, l.rate, l.period, l.burst, start})
			}
		}
	}
	return cases
}

func (c diffCase) String() string {
	return fmt.Sprintf("%v_%d_per_%v_burst_%d_from_%d", c.alg, c.rate, c.period, c.burst, c.start)
}

// TestDifferential replays random time steps (0, tiny, around one
// emission interval or period, huge, backwards) and costs (0 to 3, up to
// the limit, above it, huge) through limiter.Decide and the Redis store
// with caller time: every decision must be identical. The seeds are fixed
// (see diffSeed), so a failure reproduces.
func TestDifferential(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	for i, c := range diffCases() {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			l := mustLimit(t, c.alg, c.rate, c.period, c.burst)
			rng := rand.New(rand.NewPCG(*diffSeed, uint64(i)))
			replay(t, s, "diff:"+c.String(), l, c.start, rng, *diffSteps)
		})
	}
}

// replay runs steps random requests on a fresh key through both the model
// and the store, failing at the first decision that differs.
func replay(t *testing.T, s *Store, key string, l limiter.Limit, start int64, rng *rand.Rand, steps int) {
	t.Helper()
	var m model
	var history strings.Builder
	now := start
	for step := range steps {
		now = nextTimeUnder(rng, now, l)
		cost := nextCost(rng, l.Burst())
		at := time.UnixMicro(now)
		want := m.decide(l, at, cost)
		got := decide(t, s, store.RawKey(key), l, at, cost)
		fmt.Fprintf(&history, "  step %d: now %d cost %d -> %+v\n", step, now, cost, want)
		if got != want {
			t.Fatalf("%v: step %d (now %d µs, cost %d):\n redis %+v\n go    %+v\nsteps so far (go):\n%s",
				l, step, now, cost, got, want, history.String())
		}
	}
}

// nextTime returns the time of the next request: the same, a little or a
// lot later, on a window boundary, or earlier (a clock going back).
func nextTime(rng *rand.Rand, now, period, interval int64) int64 {
	switch x := rng.IntN(100); {
	case x < 15:
	case x < 32:
		now += 1 + rng.Int64N(10)
	case x < 50:
		now += 1 + rng.Int64N(2*interval+1)
	case x < 62:
		now += 1 + rng.Int64N(2*period)
	case x < 67:
		now += 1 + rng.Int64N(100*period)
	case x < 75: // just before, on or after the next window boundary
		now += period - now%period + rng.Int64N(3) - 1
	case x < 90:
		now -= 1 + rng.Int64N(interval+10)
	default:
		now -= 1 + rng.Int64N(3*period)
	}
	return min(max(now, -1_000_000), maxTime+1_000_000)
}

// nextTimeUnder is nextTime with the period and emission interval of l.
func nextTimeUnder(rng *rand.Rand, now int64, l limiter.Limit) int64 {
	p, n := l.Interval()
	return nextTime(rng, now, int64(l.Period()/time.Microsecond), max(p/n, 1))
}

// nextCost returns a request's cost: mostly 0 to 3, sometimes up to the
// limit, at it, above it or huge.
func nextCost(rng *rand.Rand, limit int64) int64 {
	switch x := rng.IntN(100); {
	case x < 75:
		return rng.Int64N(4)
	case x < 85:
		return rng.Int64N(limit + 1)
	case x < 92:
		return limit - rng.Int64N(min(limit, 2))
	case x < 97:
		return limit + 1 + rng.Int64N(limit)
	default:
		return 1 << 62
	}
}

// TestDifferentialLimitChanges replays random steps as TestDifferential
// does, single requests and batches, while the key's limit changes now and
// then to another of its algorithm's (rate, period and burst all move, as
// a reload or another plan moves them): Redis must reinterpret the state
// exactly as limiter.Reinterpret does.
func TestDifferentialLimitChanges(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	for i, alg := range limiter.Algorithms {
		lims := caseLimits(t, alg)
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(*diffSeed, 3000+uint64(i)))
			replayChanging(t, s, "diffchange:"+alg.String(), lims, rng, 4**diffSteps)
		})
	}
}

// caseLimits returns the limits of the diffCases of alg that start at
// epoch, for replays that move a key from one to another.
func caseLimits(t *testing.T, alg limiter.Algorithm) []limiter.Limit {
	var lims []limiter.Limit
	for _, c := range diffCases() {
		if c.alg == alg && c.start == epoch.UnixMicro() {
			lims = append(lims, mustLimit(t, c.alg, c.rate, c.period, c.burst))
		}
	}
	return lims
}

// replayChanging is replay over a key whose limit changes to one of lims
// before about one step in six; a step is a single request or a batch.
func replayChanging(t *testing.T, s *Store, key string, lims []limiter.Limit, rng *rand.Rand, steps int) {
	t.Helper()
	var m model
	var history strings.Builder
	now, l := epoch.UnixMicro(), lims[0]
	for step := range steps {
		if rng.IntN(6) == 0 {
			l = lims[rng.IntN(len(lims))]
		}
		now = nextTimeUnder(rng, now, l)
		costs := make([]int64, 1+rng.IntN(3))
		for j := range costs {
			costs[j] = nextCost(rng, l.Burst())
		}
		at := time.UnixMicro(now)
		var got []outcome
		if len(costs) == 1 {
			got = []outcome{{d: decide(t, s, store.RawKey(key), l, at, costs[0])}}
		} else {
			got = decideBatchNow(s, key, l, at, costs)
		}
		for j, cost := range costs {
			want := m.decide(l, at, cost)
			fmt.Fprintf(&history, "  step %d.%d: %v now %d cost %d -> %+v\n", step, j, l, now, cost, want)
			if got[j].err != nil || got[j].d != want {
				t.Fatalf("step %d.%d under %v (now %d µs, cost %d):\n redis %+v (%v)\n go    %+v\nsteps so far (go):\n%s",
					step, j, l, now, cost, got[j].d, got[j].err, want, history.String())
			}
		}
	}
}
