package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestRunCarbonShedsExportsWhileTheGridIsDirty plays the carbon story
// shortened to 9s (1.5s clean, 4s high, 3.5s clean again) and checks what
// it claims: no export is shed while the grid is clean; every export sent
// once sluice has read the high intensity (2s into the phase) is shed 503
// with its reason and a Retry-After; every one sent 2s after the fall is
// served; claim reads are always served.
func TestRunCarbonShedsExportsWhileTheGridIsDirty(t *testing.T) {
	defer goleak.VerifyNone(t, lingering()...)
	var out bytes.Buffer
	res, err := RunCarbon(t.Context(), CarbonOptions{Clean: 1500 * time.Millisecond, High: 4 * time.Second,
		After: 3500 * time.Millisecond, Out: &out})
	if err != nil {
		t.Fatalf("RunCarbon: %v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	if len(res.Phases) != 3 || res.Interrupted {
		t.Fatalf("phases %+v, interrupted %v; want 3, not interrupted", res.Phases, res.Interrupted)
	}
	clean, high, after := res.Phases[0], res.Phases[1], res.Phases[2]
	if clean.Exports.Sent == 0 || clean.Exports.Served != clean.Exports.Sent {
		t.Errorf("clean: exports %+v, want all served", clean.Exports)
	}
	if s := high.SettledExports; s.Sent == 0 || s.Shed != s.Sent {
		t.Errorf("high, once read: exports %+v, want all shed", s)
	}
	if s := after.SettledExports; s.Sent == 0 || s.Served != s.Sent {
		t.Errorf("clean again, once read: exports %+v, want all served", s)
	}
	for _, ph := range res.Phases {
		if r := ph.ClaimReads; r.Sent == 0 || r.Served != r.Sent {
			t.Errorf("%s: claim reads %+v, want all served", ph.Name, r)
		}
	}
	a := res.FirstShed
	if a == nil || a.StatusCode != 503 || a.Header.Get("Retry-After") == "" || !bytes.Contains(a.Body, []byte(`"reason":"shed"`)) ||
		!bytes.Contains(a.Body, []byte("signal:grid-carbon")) {
		t.Errorf("first shed export %+v, want 503 with Retry-After, reason shed, naming the signal", a)
	}
	checkOutput(t, out.String(), "sluice demo carbon: less low-value work while the grid's power is dirty",
		"the grid's carbon intensity rises to 460 gCO2/kWh (sluice's line: 400)",
		"the grid's carbon intensity falls to 280 gCO2/kWh", "the first export shed",
		"phase         gCO2/kWh  exports  served   shed claim reads  served   shed",
		"claim reads (normal priority) were never shed", "sluice serve --config")
}

// Ctrl-C: the callers stop, everything started is stopped, and the table
// is still printed.
func TestRunCarbonStopsWhenContextEnds(t *testing.T) {
	defer goleak.VerifyNone(t, lingering()...)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	var out bytes.Buffer
	res, err := RunCarbon(ctx, CarbonOptions{Out: &out})
	if err != nil {
		t.Fatalf("RunCarbon: %v\n%s", err, out.String())
	}
	if !res.Interrupted || res.Elapsed >= 31*time.Second || res.Phases[0].ClaimReads.Sent == 0 {
		t.Errorf("Interrupted %v, Elapsed %v, clean %+v; want interrupted early after some requests", res.Interrupted, res.Elapsed, res.Phases[0])
	}
	if !strings.Contains(out.String(), "result interrupted after") {
		t.Errorf("output lacks the interruption:\n%s", out.String())
	}
}
