package limiter_test

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// admittedReq is a request FuzzCancelSettleTogether admitted: under which
// of its limits, its reservation and cost, when it goes on (decided at plus
// its Delay), and what it counts for (its settled cost, 0 once cancelled).
type admittedReq struct {
	limit          int
	r              limiter.Reservation
	reserved, goes int64
	counts         int64
	done           bool // settled or cancelled: the caller does one or the other, once
	segment        int
}

// FuzzCancelSettleTogether drives one key as a store does, through
// decisions, cancels of held requests, settlements at any actual cost and
// changes between two limits of one algorithm (the state reinterpreted;
// a cancel or settlement under a limit the state is no longer written
// under is void, as the stores make it), and checks that Remaining stays
// in [0, Limit] and that the requests decided under one limit while it
// lasted, counted at their settled costs and going on after their holds,
// keep that limit's bound: for the buckets B + N*L/P over every interval
// of length L; for the windows N in each window (sliding_log: every
// interval of length P). Each step is 3 bytes: a time step, a kind (0-3 a
// request, 4-5 a settlement, 6 a cancel, 7 a change of limit) with the
// request it names in the high bits, and a cost.
func FuzzCancelSettleTogether(f *testing.F) {
	for _, alg := range limiter.Algorithms {
		f.Add(uint8(alg), int64(3), int64(1_000_000), int64(3), int64(500), []byte{0, 0, 3, 0, 0, 2, 0, 0, 1, 0, 6, 0, 0, 4, 0, 0, 0, 3, 9, 7, 0, 0, 0, 2, 0, 12, 0, 0, 0, 3})
		f.Add(uint8(alg), int64(2), int64(2_000_000), int64(1), int64(1000), []byte{0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 22, 0, 0, 5, 9, 0, 0, 1, 7, 7, 0, 0, 0, 1, 0, 20, 0})
	}
	f.Fuzz(func(t *testing.T, alg uint8, rate, period, burst, delayMs int64, b []byte) {
		var ls [2]limiter.Limit
		for i := range ls {
			l, err := limiter.New(limiter.Algorithm(alg), rate+int64(i), time.Duration(period)*time.Microsecond, burst+int64(2*i))
			if err != nil {
				return
			}
			if l.Algorithm().HasBurst() {
				if l, err = l.WithDelay(time.Duration(delayMs%5000) * time.Millisecond); err != nil {
					return
				}
			}
			ls[i] = l
		}
		runTogether(t, ls, b)
	})
}

func runTogether(t *testing.T, ls [2]limiter.Limit, b []byte) {
	var st limiter.State
	cur, segment := 0, 0
	var reqs []*admittedReq
	now := int64(1_700_000_000_000_000)
	for i := 0; i+2 < len(b) && i < 3*maxSteps; i += 3 {
		l := ls[cur]
		now += int64(b[i]) * max(l.Period().Microseconds()/64, 1)
		at := time.UnixMicro(now)
		kind, pick := b[i+1]%8, int(b[i+1]/8)
		cost := decodeCost(b[i+2], l.Burst())
		var d limiter.Decision
		switch {
		case kind < 4:
			d, st = limiter.Decide(l, st, at, cost)
			if d.Allowed && cost > 0 {
				reqs = append(reqs, &admittedReq{limit: cur, r: d.Reservation, reserved: cost, counts: cost,
					goes: now + d.Delay.Microseconds(), segment: segment})
			}
		case kind == 7:
			cur, segment = 1-cur, segment+1
			st = limiter.Reinterpret(l, ls[cur], st, at)
			continue
		case len(reqs) == 0:
			continue
		default:
			q := reqs[pick%len(reqs)]
			if q.done || q.limit != cur { // void under another limit
				continue
			}
			q.done = true
			if kind == 6 {
				if l.Cancel(&st, q.r, q.reserved) {
					q.counts = 0
				}
				continue
			}
			st, d = limiter.Settle(l, st, at, q.r, q.reserved, cost)
			q.counts = min(max(cost, 0), q.reserved)
		}
		if d.Remaining < 0 || d.Remaining > d.Limit {
			t.Fatalf("step %d: Remaining %d outside [0, %d]", i/3, d.Remaining, d.Limit)
		}
	}
	for s := 0; s <= segment; s++ {
		var admitted []*held
		var out []release
		l := ls[s%2]
		for _, q := range reqs {
			if q.segment == s {
				admitted = append(admitted, &held{at: q.goes, counts: q.counts})
				out = append(out, release{q.goes, q.counts})
			}
		}
		if l.Algorithm().HasBurst() {
			checkConforms(t, l, out)
		} else {
			checkSettledBound(t, l, admitted)
		}
	}
}
