package limiter_test

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// held is an admitted request of a settle fuzz run: when it was reserved,
// what it reserved, and what it counts for once settled (the least of its
// reserved and actual costs: a charge is what the limit could not refuse).
type held struct {
	at, reserved, counts int64
	r                    limiter.Reservation
	settled              bool
}

// FuzzSettleInvariants reserves and settles requests on one key, with time
// going forward, and checks that settling never reports a Remaining outside
// [0, Limit], never panics, and never lets more pass than the algorithm's
// bound, counting each request at its settled cost: for the buckets
// B + N*L/P over every interval of length L; for the windows N in each
// window (sliding_log: every interval of length P).
// Each step is 3 bytes: a time step, a kind (even: a request; odd: the
// settling of the held request it names) and a cost.
func FuzzSettleInvariants(f *testing.F) {
	jan := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	for _, alg := range limiter.Algorithms {
		f.Add(uint8(alg), int64(3), int64(1_000_000), int64(0), jan, []byte{0, 0, 3, 0, 1, 0, 0, 0, 3, 9, 0, 2, 0, 0, 3, 0, 3, 0})
		f.Add(uint8(alg), int64(2), int64(2_000_000), int64(2), jan, []byte{0, 0, 2, 200, 0, 2, 0, 1, 0, 0, 0, 2, 0, 0, 1})
	}
	f.Add(uint8(limiter.TokenBucket), int64(2), int64(2_000_000), int64(2), jan, []byte{0, 0, 2, 0, 0, 2, 0, 0, 3, 0, 1, 0, 0, 3, 0})
	f.Fuzz(func(t *testing.T, alg uint8, rate, period, burst, start int64, b []byte) {
		l, err := limiter.New(limiter.Algorithm(alg), rate, time.Duration(period)*time.Microsecond, burst)
		if err != nil || start < 1 || start > maxTime/2 {
			return
		}
		// An odd burst on a bucket also holds requests for their turn, up
		// to a period: settling must stay in range with a queue too (the
		// bound below is then FuzzDelayInvariants' business).
		delayed := false
		if l.Algorithm().HasBurst() && burst%2 == 1 {
			if dl, err := l.WithDelay(min(l.Period(), limiter.MaxDelay)); err == nil {
				l, delayed = dl, true
			}
		}
		var st limiter.State
		var admitted []*held
		now := start
		for i := 0; i+2 < len(b) && i < 3*maxSteps; i += 3 {
			now += int64(b[i]) * max(l.Period().Microseconds()/64, 1)
			at := time.UnixMicro(now)
			var d limiter.Decision
			cost := decodeCost(b[i+2], l.Burst())
			if b[i+1]%2 == 0 {
				d, st = limiter.Decide(l, st, at, cost)
				if d.Allowed && cost > 0 {
					admitted = append(admitted, &held{at: now, reserved: cost, counts: cost, r: d.Reservation})
				}
			} else if len(admitted) > 0 {
				h := admitted[int(b[i+1]/2)%len(admitted)]
				if h.settled {
					continue
				}
				h.settled = true
				st, d = limiter.Settle(l, st, at, h.r, h.reserved, cost)
				h.counts = min(max(cost, 0), h.reserved)
			}
			if d.Remaining < 0 || d.Remaining > d.Limit {
				t.Fatalf("step %d: Remaining %d outside [0, %d]", i/3, d.Remaining, d.Limit)
			}
		}
		if !delayed {
			checkSettledBound(t, l, admitted)
		}
	})
}

// checkSettledBound checks the algorithm's bound over the admitted
// requests at their settled costs.
func checkSettledBound(t *testing.T, l limiter.Limit, admitted []*held) {
	t.Helper()
	n, p := l.Rate(), l.Period().Microseconds()
	for i := range admitted {
		sum := int64(0)
		for j := i; j < len(admitted); j++ {
			sum += admitted[j].counts
			elapsed := admitted[j].at - admitted[i].at
			var over bool
			switch l.Algorithm() {
			case limiter.FixedWindow, limiter.SlidingWindow:
				over = admitted[j].at/p == admitted[i].at/p && sum > n
			case limiter.SlidingLog:
				over = elapsed < p && sum > n
			default: // sum <= B + N*elapsed/P, in integers
				over = float64(sum-l.Burst())*float64(p) > float64(n)*float64(elapsed)
			}
			if over {
				t.Fatalf("requests %d to %d (%dµs apart) passed %d under %v", i, j, elapsed, sum, l)
			}
		}
	}
}
