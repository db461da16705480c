package policy

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// FuzzScheduleAt builds a policy with a scheduled rule, a plan with its
// own override and a scheduled one, and a client's own override, from
// fuzzed rates, bursts, costs and hours. Whatever Compile accepts, every
// policy At makes over two weeks compiles (Compile's checks of schedules
// cover every limit an entry meets), keeps every state key, and its next
// change is after the instant asked about.
func FuzzScheduleAt(f *testing.F) {
	f.Add(uint8(4), int64(10), int64(time.Second), int64(20), int64(1), int64(5), int64(time.Second), int64(0), uint16(8*60), uint16(18*60), uint8(0b0111110), int64(40), int64(80), int64(5))
	f.Add(uint8(2), int64(100), int64(time.Minute), int64(0), int64(3), int64(2), int64(time.Minute), int64(0), uint16(22*60), uint16(6*60), uint8(1<<5), int64(20), int64(2), int64(0))
	f.Add(uint8(5), int64(7), int64(3*time.Millisecond), int64(1_000_000_000), int64(1), int64(9), int64(time.Millisecond), int64(999_999_999), uint16(0), uint16(0), uint8(0), int64(1_000_000_000), int64(1), int64(1))
	f.Fuzz(func(t *testing.T, alg uint8, n, period, burst, cost, en, eperiod, eburst int64, from, to uint16, days uint8,
		planN, planEntryN, ownN int64) {
		var wd []time.Weekday
		for d := time.Sunday; d <= time.Saturday; d++ {
			if days&(1<<d) != 0 {
				wd = append(wd, d)
			}
		}
		minute := func(m uint16) time.Duration { return time.Duration(m%(24*60+1)) * time.Minute }
		var entryRate *Rate
		if en != 0 {
			entryRate = &Rate{N: en, Period: time.Duration(eperiod)}
		}
		p := Policy{
			Rules: []Rule{{Name: "r", Algorithm: limiter.Algorithm(alg % 7), Rate: Rate{N: n, Period: time.Duration(period)}, Burst: burst, Cost: cost,
				Schedule: Schedule{{Days: wd, From: minute(from), To: minute(to), Rate: entryRate, Burst: eburst}}}},
			Plans: map[string]Plan{
				"own": {Limits: map[string]Rate{"r": {N: planN, Period: time.Duration(period)}}},
				"sch": {Schedule: []PlanScheduleEntry{{Days: wd[:len(wd)/2], From: minute(to), To: minute(from), Limits: map[string]Rate{"r": {N: planEntryN, Period: time.Duration(period)}}}}},
			},
			Clients: Clients{List: []Client{
				{ID: "a", Keys: []string{"ka"}, Plan: "own"},
				{ID: "b", Keys: []string{"kb"}, Plan: "sch"},
				{ID: "c", Keys: []string{"kc"}, Limits: map[string]Rate{"r": {N: ownN, Period: time.Duration(period)}}},
			}},
		}
		c, err := Compile(p)
		if err != nil {
			return
		}
		t0 := time.Date(2026, 3, 23, 0, 0, 0, 0, time.UTC)
		for h := 0; h < 14*24; h += 5 {
			at := t0.Add(time.Duration(h) * time.Hour)
			in, next, err := c.at(at)
			if err != nil {
				t.Fatalf("at %v: %v", at, err)
			}
			if !next.IsZero() && !next.After(at) {
				t.Fatalf("at %v: next change %v is not after it", at, next)
			}
			for _, id := range []string{"a", "b", "c"} {
				x, _ := in.CallerByID(id)
				y, _ := c.CallerByID(id)
				if x.StateTag(0) != y.StateTag(0) || x.LimitSource(0) != y.LimitSource(0) {
					t.Fatalf("at %v: client %s's key changed: %s %s, was %s %s", at, id, x.StateTag(0), x.LimitSource(0), y.StateTag(0), y.LimitSource(0))
				}
			}
		}
	})
}
