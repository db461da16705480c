package demo

import (
	"context"
	"errors"
	"io"
	"os"
	"time"
)

// CarbonOptions tune the carbon demo; the zero value is the real demo
// (31 s).
type CarbonOptions struct {
	// Clean, High and After are the three phases: the grid's carbon
	// intensity low, then above sluice's line, then low again. Defaults
	// 8s, 15s, 8s.
	Clean, High, After time.Duration
	// Out receives the story and the final table. Default os.Stdout.
	Out io.Writer
}

func (o CarbonOptions) withDefaults() CarbonOptions {
	if o.Clean <= 0 {
		o.Clean = 8 * time.Second
	}
	if o.High <= 0 {
		o.High = 15 * time.Second
	}
	if o.After <= 0 {
		o.After = 8 * time.Second
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	return o
}

// CarbonResult is what the carbon demo measured.
type CarbonResult struct {
	// Elapsed is how long the callers sent; Interrupted reports that the
	// context ended first.
	Elapsed     time.Duration
	Interrupted bool
	// Phases are the three phases, in order.
	Phases []CarbonPhase
	// FirstShed is the first export sluice shed; nil if none was.
	FirstShed *Answer
}

// CarbonPhase is what became of the requests sent during one phase.
type CarbonPhase struct {
	// Name is the phase's ("clean", "high", "clean again"); Intensity the
	// grid's carbon intensity the stand-in reported, in gCO2/kWh.
	Name      string
	Intensity float64
	// ClaimReads and Exports count every request sent in the phase.
	ClaimReads, Exports Counts
	// SettledClaimReads and SettledExports count those sent once sluice
	// had had time to read the phase's intensity: from settle (2 × the
	// signal's interval) into the phase on.
	SettledClaimReads, SettledExports Counts
}

// Counts are requests sent and what became of them: Served (2xx), Shed
// (sluice's 503 naming a reason), Failed (anything else).
type Counts struct {
	Sent, Served, Shed, Failed int
}

// RunCarbon plays seed 002's carbon story: a claims service with reads
// (normal priority) and bulk exports (low), sluice in front of it reading
// the grid's carbon intensity from a stand-in on 127.0.0.1 every second
// (protect.signals). While the intensity is above 400 gCO2/kWh the
// exports are shed (503) and the reads go on; once it falls, the exports
// are served again. It prints a line a second, one shed answer as the
// caller saw it and a table per phase, stops everything it started and
// returns what it measured. When ctx ends early the table is still
// printed.
func RunCarbon(ctx context.Context, opts CarbonOptions) (*CarbonResult, error) {
	opts = opts.withDefaults()
	out := &printer{w: opts.Out}
	s, err := setUpCarbon(opts)
	if err != nil {
		return nil, err
	}
	out.carbonIntro(s, opts)
	gwCtx, stopGateway := context.WithCancel(context.WithoutCancel(ctx))
	defer stopGateway()
	s.startGrid()
	s.start(gwCtx)
	res := s.play(ctx, opts, out)
	err = errors.Join(s.tearDown(stopGateway), s.stopGrid())
	out.carbonTable(res)
	out.carbonConclusion(res)
	return res, errors.Join(err, out.err)
}
