package limiter_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// maxTime is the latest time Decide distinguishes, in µs since the epoch;
// it takes every time before 1970 as 1µs.
const maxTime = 1 << 52

func clamp(us int64) int64 { return min(max(us, 1), maxTime) }

// A fuzz step is 3 bytes: a scale, a signed multiple of it (the time moves
// by their product, backwards too), and a cost.
const maxSteps = 200

var scales = [8]int64{0, 1, 7, 1_000, 13_001, 1_000_000, 3_600_000_000, 30 * 86_400_000_000}

type step struct{ delta, cost int64 }

func decodeSteps(b []byte, burst int64) []step {
	var steps []step
	for i := 0; i+2 < len(b) && len(steps) < maxSteps; i += 3 {
		delta := int64(int8(b[i+1])) * scales[b[i]%8]
		steps = append(steps, step{delta, decodeCost(b[i+2], burst)})
	}
	return steps
}

// decodeCost gives mostly small costs, then fractions of the burst up to
// all of it, then costs at and beyond the edges.
func decodeCost(c byte, burst int64) int64 {
	switch {
	case c < 128:
		return int64(c % 8)
	case c < 248:
		return max(1, burst*int64(c-127)/120)
	}
	return [8]int64{-1, burst - 1, burst + 1, limiter.MaxBurst + 1, math.MaxInt64, math.MaxInt64 - 1, math.MinInt64, 1 << 62}[c-248]
}

// FuzzDecideInvariants decides a sequence of requests on one key and checks
// what limiter's docs promise: no panic; 0 <= Remaining <= Limit; Allowed
// exactly when RetryAfter is 0; a denied request changes nothing; Remaining,
// RetryAfter and Reset tell the truth; and, while time does not go back, no
// more pass than each algorithm's bound. The period is in microseconds.
func FuzzDecideInvariants(f *testing.F) {
	jan := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	same, fwd, back := []byte{0, 0, 1}, []byte{3, 100, 1}, []byte{4, 200, 1}
	for i, alg := range limiter.Algorithms {
		b := slices.Concat(same, same, same, same, fwd, same, back, fwd, fwd, []byte{5, 1, 200, 6, 1, 0, 7, 50, 247})
		f.Add(uint8(alg), int64(3), int64(1_000_000), int64(0), jan+int64(i)*1_234_567, b)
		f.Add(uint8(alg), int64(7), int64(10_000), int64(0), jan, slices.Concat(fwd, same, same, []byte{1, 3, 3, 2, 1, 2, 1, 127, 250, 0, 0, 252}))
		f.Add(uint8(alg), int64(1), int64(1000), int64(1), int64(maxTime-5000), []byte{0, 0, 1, 3, 3, 1, 3, 5, 1})
		f.Add(uint8(alg), int64(100), int64(60_000_000), int64(0), int64(-5), []byte{0, 0, 100, 1, 10, 1, 5, 60, 1, 6, 100, 1})
	}
	f.Add(uint8(limiter.TokenBucket), int64(10), int64(1_000_000), int64(3), jan, []byte{0, 0, 3, 0, 0, 1, 3, 50, 1, 3, 50, 1, 3, 100, 200})
	f.Add(uint8(limiter.GCRA), int64(1e9), int64(1000), int64(1e6), jan, []byte{0, 0, 247, 1, 1, 247, 0, 0, 1, 1, 255, 0})
	f.Add(uint8(limiter.LeakyBucket), int64(1), int64(31_622_400_000_000), int64(0), jan, []byte{0, 0, 1, 7, 127, 1, 7, 127, 1, 7, 127, 1})
	f.Add(uint8(limiter.SlidingWindow), int64(2), int64(1_000_000), int64(0), jan+999_999, []byte{0, 0, 2, 1, 1, 1, 1, 1, 1, 3, 127, 1, 3, 127, 1})
	f.Add(uint8(limiter.SlidingLog), int64(10_000), int64(1000), int64(0), jan, []byte{0, 0, 247, 1, 1, 1, 3, 1, 247})
	f.Add(uint8(0), int64(1), int64(1000), int64(0), jan, []byte{0, 0, 1, 1, 255, 1}) // no algorithm
	f.Add(uint8(limiter.FixedWindow), int64(5), int64(60_000_000), int64(0), jan+59_999_000, []byte{0, 0, 5, 3, 1, 5, 3, 1, 1})
	// Found by the fuzzer: a clock gone back within a sliding window
	// weighed the previous window more and denied a look.
	f.Add(uint8(limiter.SlidingWindow), int64(22), int64(1000), int64(0), jan, []byte("0001\xda070720\xdd0002\xda0"))
	f.Fuzz(func(t *testing.T, alg uint8, rate, period, burst, start int64, b []byte) {
		l, err := limiter.New(limiter.Algorithm(alg), rate, time.Duration(period)*time.Microsecond, burst)
		if err != nil {
			l = limiter.Limit{} // still decide, with the zero Limit
		}
		run := newRun(t, l)
		now := start
		for _, s := range decodeSteps(b, l.Burst()) {
			now = addSat(now, s.delta)
			run.step(now, s.cost)
		}
		run.checkBounds()
	})
}

// addSat returns a+b, saturated to the int64 range.
func addSat(a, b int64) int64 {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		if b > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return s
}
