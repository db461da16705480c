package demo

import (
	"bytes"
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestRunOverloadKeepsCriticalAndShedsLow plays the month-end story
// shortened to 7s (1s without sluice, then 1s calm, 4s month-end, 1s
// after) at the real demo's rates and checks what it claims: the claim
// reads (critical) are answered, exports (low) are shed, reports (degrade)
// switched off, and the claims service never has more than the ceiling at
// once, as it counts itself; the baseline without sluice, each phase's own
// p99 and the limit before, at its lowest and after are measured and
// printed. Latencies are printed, not asserted: a loaded machine may be
// slow, never wrong.
// machineBehind is a calm-phase p99 of claim reads that says the machine,
// not the service, was slow: calm, the service answers in milliseconds.
const machineBehind = 300 * time.Millisecond

func TestRunOverloadKeepsCriticalAndShedsLow(t *testing.T) {
	defer goleak.VerifyNone(t, lingering()...)
	var out bytes.Buffer
	var res *OverloadResult
	// The run is real time on this machine: when the machine itself falls
	// behind (a loaded CI host starving the test of CPU, so that even the
	// calm phase, the service nearly idle, answers slowly), what it measured
	// is the machine, not sluice, and it is run once more.
	for try := 1; ; try++ {
		out.Reset()
		var err error
		res, err = RunOverload(t.Context(), OverloadOptions{
			Baseline: time.Second, Calm: time.Second, MonthEnd: 4 * time.Second, After: time.Second,
			Out: &out, Progress: 500 * time.Millisecond,
		})
		if err != nil {
			t.Fatalf("RunOverload: %v\n%s", err, out.String())
		}
		if len(res.Classes) != 4 {
			t.Fatalf("%d classes; want 4", len(res.Classes))
		}
		calm := res.Classes[0].PhaseP99[phaseCalm]
		if try == 2 || res.Classes[0].OK() >= 0.99 || calm < machineBehind {
			break
		}
		t.Logf("run %d: claim reads' calm p99 %v (the service nearly idle): the machine fell behind; once more\n%s", try, calm, out.String())
	}
	t.Log("\n" + out.String())
	reads, exports := res.Classes[0], res.Classes[3]
	if reads.Priority != "critical" || reads.Sent == 0 || reads.OK() < 0.99 {
		t.Errorf("claim reads %+v: want critical, at least 99%% answered 2xx", reads)
	}
	if exports.Priority != "low" || exports.Shed == 0 {
		t.Errorf("exports %+v: want low, some shed", exports)
	}
	for p, p99 := range reads.PhaseP99 {
		if p99 <= 0 {
			t.Errorf("claim reads: no p99 of their own in phase %s", phaseNames[p])
		}
	}
	if len(res.Baseline) != 4 || res.Baseline[0].Sent == 0 || res.Baseline[0].P99 <= 0 || res.BaselineMaxInFlight == 0 {
		t.Errorf("baseline %+v, at most %d at once: want the 4 classes sent straight at the service", res.Baseline, res.BaselineMaxInFlight)
	}
	if res.LimitBefore == 0 || res.LimitLowest == 0 || res.LimitLowest > res.LimitBefore || res.LimitLowest > res.LimitAfter {
		t.Errorf("limit before %d, lowest %d, after %d: want the lowest at most the others", res.LimitBefore, res.LimitLowest, res.LimitAfter)
	}
	if res.UpstreamMaxInFlight == 0 || res.UpstreamMaxInFlight > res.Ceiling {
		t.Errorf("the claims service had at most %d at once; want 1 to the ceiling %d", res.UpstreamMaxInFlight, res.Ceiling)
	}
	for _, c := range res.Classes {
		if c.Queued < 0 {
			t.Errorf("%s: queued unknown; want sluice_queue_wait_seconds by priority", c.Name)
		}
		if c.Failed != 0 || c.Sent != c.Passed+c.Degraded+c.Shed {
			t.Errorf("%s %+v: want every request passed, degraded or shed", c.Name, c)
		}
	}
	checkOutput(t, out.String(), "month-end: the claims service is now 4× as slow",
		"request      priority          sent  passed  degraded   shed  queued  p50 ms  p99 ms",
		"the in-flight limit over time:", "at the claims service at once: at most", "claim reads:", "sluice serve --config",
		"without sluice: claim reads p99", "p99 ms           calm  month-end    after   month-end without sluice",
		"claim reads p99 (last 500ms)", "the adaptive limit: ")
}

// Ctrl-C: the callers stop, everything started is stopped, and the table
// is still printed.
func TestRunOverloadStopsWhenContextEnds(t *testing.T) {
	defer goleak.VerifyNone(t, lingering()...)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	var out bytes.Buffer
	res, err := RunOverload(ctx, OverloadOptions{Baseline: 50 * time.Millisecond, Out: &out, Progress: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("RunOverload: %v\n%s", err, out.String())
	}
	if !res.Interrupted || res.Elapsed >= 38*time.Second || res.Classes[0].Sent == 0 {
		t.Errorf("Interrupted %v, Elapsed %v, claim reads %+v; want interrupted early after some requests",
			res.Interrupted, res.Elapsed, res.Classes[0])
	}
	checkOutput(t, out.String(), "result interrupted after", "claim reads  critical")
}

func TestSortLabels(t *testing.T) {
	for in, want := range map[string]string{
		`x{priority="low",le="0.001"}`: `x{le="0.001",priority="low"}`,
		`sluice_in_flight`:             `sluice_in_flight`,
		`x{a="1"}`:                     `x{a="1"}`,
	} {
		if got := sortLabels(in); got != want {
			t.Errorf("sortLabels(%s) = %s; want %s", in, got, want)
		}
	}
}
