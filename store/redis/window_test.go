package redis

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// roundingPoints returns elapsed times e in [0, period) at which the
// estimate prev*(period-e)/period is rounded differently when computed in
// another order than limiter.weighted's, plus the points where it is an
// exact integer: where a script that computed it otherwise would disagree.
// Most limits have none; large counts over long periods have many.
func roundingPoints(prev, period int64, rng *rand.Rand, want int) []int64 {
	others := []func(e int64) int64{
		func(e int64) int64 { return int64(math.Floor(float64(prev) * (float64(period-e) / float64(period)))) },
		func(e int64) int64 { return int64(math.Floor(float64(prev) / float64(period) * float64(period-e))) },
	}
	ref := func(e int64) int64 {
		return int64(math.Floor(float64(prev) * float64(period-e) / float64(period)))
	}
	var pts []int64
	for i := 0; i < 50_000 && len(pts) < want; i++ {
		e := rng.Int64N(period)
		if i%2 == 0 { // where the estimate is a whole number: e = k*period/gcd(prev, period)
			step := period / gcd(prev, period)
			e = rng.Int64N(period/step+1) * step % period
		}
		for _, other := range others {
			if other(e) != ref(e) {
				pts = append(pts, e)
				break
			}
		}
	}
	return pts
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// TestSlidingWindowRounding fills the previous window and then decides at
// the elapsed times where the weighted estimate's rounding depends on the
// order of operations: the script must round exactly as Go does.
func TestSlidingWindowRounding(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	rng := rand.New(rand.NewPCG(7, 7))
	limits := []struct {
		rate   int64
		period time.Duration
	}{{3, 3 * time.Second}, {100, time.Minute}, {999, time.Hour}, {1_000_000_000, 366 * day}, {123_456_789, 7 * day}, {1_000_000_000, 3 * time.Millisecond}}
	found := 0
	for _, lim := range limits {
		l := mustLimit(t, limiter.SlidingWindow, lim.rate, lim.period, 0)
		period := int64(lim.period / time.Microsecond)
		w0 := epoch.UnixMicro() - epoch.UnixMicro()%period // a window start
		for _, prev := range []int64{lim.rate, lim.rate - 1, lim.rate/2 + 1, 1 + rng.Int64N(lim.rate)} {
			for i, e := range roundingPoints(prev, period, rng, 8) {
				found++
				key := fmt.Sprintf("round:%v:%d:%d", l, prev, i)
				var m model
				steps := []struct{ at, cost int64 }{
					{w0 + period - 1, prev}, // the previous window's count
					{w0 + period + e, 0},    // look at the estimate
					{w0 + period + e, 1},    // and ask for one more, which may be denied
					{w0 + period + e, lim.rate},
				}
				for _, st := range steps {
					at := time.UnixMicro(st.at)
					want := m.decide(l, at, st.cost)
					if got := decide(t, s, store.RawKey(key), l, at, st.cost); got != want {
						t.Fatalf("%v prev %d e %d cost %d:\n redis %+v\n go    %+v", l, prev, e, st.cost, got, want)
					}
				}
			}
		}
	}
	if found < 20 {
		t.Fatalf("found only %d rounding points; the test would prove little", found)
	}
	t.Logf("checked %d rounding points", found)
}

// TestSlidingLogBounded checks that requests of the same microsecond share
// one log entry, so that the log never holds more than rate entries.
func TestSlidingLogBounded(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	l := mustLimit(t, limiter.SlidingLog, 5, time.Second, 0)
	for i := range 5 {
		decide(t, s, store.RawKey("log"), l, epoch, 1)
		decide(t, s, store.RawKey("log"), l, epoch.Add(time.Duration(i)*time.Microsecond), 0)
	}
	if d := decide(t, s, store.RawKey("log"), l, epoch, 1); d.Allowed {
		t.Fatalf("sixth request allowed: %+v", d)
	}
	n, err := s.client.Do(context.Background(), s.client.B().Llen().Key(redisKey(s.prefix, store.RawKey("log"))).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("log of 5 requests in one microsecond has %d list elements, want 3 (the total and one entry)", n)
	}
	// Entries expire from the front as time passes.
	decide(t, s, store.RawKey("log"), l, epoch.Add(time.Second+time.Microsecond), 2)
	decide(t, s, store.RawKey("log"), l, epoch.Add(time.Second+2*time.Microsecond), 1)
	n, err = s.client.Do(context.Background(), s.client.B().Llen().Key(redisKey(s.prefix, store.RawKey("log"))).Build()).AsInt64()
	if err != nil || n != 5 {
		t.Fatalf("log after expiry: %d elements (err %v), want 5 (the total and two entries)", n, err)
	}
}

// TestSlidingLogLong fills a log of 100 entries and then expires, and
// scans for a retry, more entries at once than the script reads in one
// chunk, comparing every decision with Go's.
func TestSlidingLogLong(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	l := mustLimit(t, limiter.SlidingLog, 100, time.Second, 0)
	type step struct {
		at   time.Duration
		cost int64
	}
	var steps []step
	for i := range 100 {
		steps = append(steps, step{time.Duration(i) * 10 * time.Microsecond, 1})
	}
	steps = append(steps,
		step{time.Second + 5*time.Microsecond, 50},    // one expired; denied, the retry frees 49 entries
		step{time.Second + 5*time.Microsecond, 1},     // allowed
		step{time.Second + 705*time.Microsecond, 0},   // 71 expired: a look
		step{time.Second + 705*time.Microsecond, 100}, // denied: 30 live entries to scan
		step{time.Second + 705*time.Microsecond, 70},  // allowed: the 71 are dropped
		step{time.Second + 706*time.Microsecond, 1},
		step{time.Second + 990*time.Microsecond, 2},
		step{2*time.Second + 704*time.Microsecond, 50}, // the 70 have expired
		step{5 * time.Second, 3},                       // all of them
	)
	var m model
	for i, st := range steps {
		at := epoch.Add(st.at)
		want := m.decide(l, at, st.cost)
		if got := decide(t, s, store.RawKey("long"), l, at, st.cost); got != want {
			t.Fatalf("step %d (+%v, cost %d):\n redis %+v\n go    %+v", i, st.at, st.cost, got, want)
		}
	}
}
