package decision_test

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store/memory"
)

// Counters survive a schedule's change, as a reload's: 2 of 10 a day
// spent before 09:00 leave 1 of the entry's 3 from 09:00, and once the
// entry ends at 18:00 the rule's 10 a day count the 3 spent.
func TestScheduleKeepsCounters(t *testing.T) {
	day := epoch // 2030-01-01, a Tuesday, at 00:00 UTC
	clk := clock.NewFake(day.Add(8 * time.Hour))
	mem := memory.New(memory.Options{Clock: clk})
	t.Cleanup(func() { _ = mem.Close() })
	e, err := decision.New(decision.Options{Store: mem, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Compile(policy.Policy{Rules: []policy.Rule{{
		Name: "exports", Match: policy.Match{Path: "/exports"}, Key: policy.KeySpec{Kind: policy.KeyIP},
		Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 10, Period: 24 * time.Hour},
		Schedule: policy.Schedule{{From: 9 * time.Hour, To: 18 * time.Hour, Rate: &policy.Rate{N: 3, Period: 24 * time.Hour}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	passes := func(n int) int {
		in, _ := pol.At(clk.Now())
		got := 0
		for range n {
			if decide(t, e, in, get("/exports", hdr{})).pass {
				got++
			}
		}
		return got
	}
	if got := passes(2); got != 2 {
		t.Fatalf("08:00: %d of 2 passed", got)
	}
	clk.Advance(time.Hour) // 09:00: the entry, 3 a day
	if got := passes(3); got != 1 {
		t.Errorf("09:00: %d of 3 passed, want 1 (2 of the entry's 3 already spent)", got)
	}
	clk.Advance(9 * time.Hour) // 18:00: the rule's 10 a day again
	if got := passes(10); got != 7 {
		t.Errorf("18:00: %d of 10 passed, want 7 (3 of 10 spent)", got)
	}
}
