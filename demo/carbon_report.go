package demo

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// carbonIntro tells who is who and shows sluice's configuration.
func (p *printer) carbonIntro(c *carbonScene, opts CarbonOptions) {
	var b strings.Builder
	b.WriteString("sluice demo carbon: less low-value work while the grid's power is dirty\n\n")
	fmt.Fprintf(&b, "  claims service  %-24s GET /claims/{id} (claim reads), GET /exports/{n} (bulk exports)\n", c.claimsURL)
	fmt.Fprintf(&b, "  sluice          %-24s in front of it; admin (metrics, overview) on %s\n", c.sluiceURL, c.adminURL)
	fmt.Fprintf(&b, "  grid            %-24s a stand-in for the grid operator's carbon intensity, in gCO2/kWh\n",
		strings.TrimSuffix(c.gridURL, "/carbon-intensity"))
	fmt.Fprintf(&b, "  callers         claim reads and exports, one of each every %v, whatever the answers\n\n", carbonPace)
	b.WriteString("sluice's configuration (`sluice serve --config` reads the same file):\n\n")
	for line := range strings.Lines(c.yaml) {
		if line != "\n" {
			b.WriteString("    ")
		}
		b.WriteString(line)
	}
	fmt.Fprintf(&b, "\nthe grid reports %v for %s, %v for %s, then %v for %s (Ctrl-C ends early) ...\n\n",
		intensities[0], opts.Clean, intensities[1], opts.High, intensities[2], opts.After)
	b.WriteString("   time  grid     sluice reads  degraded  exports served/shed  claim reads served/shed\n")
	p.printf("%s", b.String())
}

// play lets the callers send through the three phases, sets the grid's
// intensity at each change and prints a line a second.
func (c *carbonScene) play(ctx context.Context, opts CarbonOptions, out *printer) *CarbonResult {
	cctx, stopCallers := context.WithCancel(ctx)
	defer stopCallers()
	start := time.Now()
	var wg sync.WaitGroup
	for _, kind := range []int{claimReads, exports} {
		wg.Go(func() { c.call(cctx, kind, start, c.duration) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	high, after := time.NewTimer(opts.Clean), time.NewTimer(opts.Clean+opts.High)
	defer high.Stop()
	defer after.Stop()
	gwStopped := c.gwStopped
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-high.C:
			c.enter(1, time.Since(start), out)
		case <-after.C:
			c.enter(2, time.Since(start), out)
		case <-tick.C:
			c.progress(ctx, time.Since(start), out)
		case <-gwStopped:
			stopCallers() // nobody would answer them
			gwStopped = nil
		}
	}
	return c.result(time.Since(start), cctx.Err() != nil)
}

// enter starts phase: the stand-in grid reports its intensity from now on.
func (c *carbonScene) enter(phase int, at time.Duration, out *printer) {
	c.setIntensity(intensities[phase])
	verb := "rises"
	if intensities[phase] < intensities[phase-1] {
		verb = "falls"
	}
	out.printf("  %4.1fs  the grid's carbon intensity %s to %v gCO2/kWh (sluice's line: %d)\n", at.Seconds(), verb, intensities[phase], carbonLine)
}

// progress prints the last second: what the grid reports, what sluice
// read and whether it degrades, and what the callers got.
func (c *carbonScene) progress(ctx context.Context, at time.Duration, out *printer) {
	sec := c.takeSecond()
	degraded, value, ok := c.sluiceView(ctx)
	read, on := "-", "no"
	if ok {
		read = fmt.Sprintf("%v", value)
	}
	if degraded {
		on = "yes"
	}
	out.printf("  %4.0fs  %-7v  %-12s  %-8s  %6d / %-11d  %6d / %d\n", at.Seconds(), c.gridIntensity(), read, on,
		sec[exports].Served, sec[exports].Shed, sec[claimReads].Served, sec[claimReads].Shed)
}

// result is what the callers got, per phase.
func (c *carbonScene) result(elapsed time.Duration, interrupted bool) *CarbonResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	res := &CarbonResult{Elapsed: elapsed, Interrupted: interrupted, FirstShed: c.firstShed}
	for i := range carbonPhases {
		res.Phases = append(res.Phases, CarbonPhase{Name: carbonPhaseNames[i], Intensity: intensities[i],
			ClaimReads: c.counts[i][claimReads], Exports: c.counts[i][exports],
			SettledClaimReads: c.settled[i][claimReads], SettledExports: c.settled[i][exports]})
	}
	return res
}

// carbonTable prints one shed export as its caller saw it and the figures
// per phase.
func (p *printer) carbonTable(res *CarbonResult) {
	var b strings.Builder
	if a := res.FirstShed; a != nil {
		fmt.Fprintf(&b, "\n  the first export shed (at %.1fs): sluice answers itself, the claims service never sees it:\n\n", a.At.Seconds())
		b.WriteString(answerText(a, "      "))
	}
	if res.Interrupted {
		fmt.Fprintf(&b, "\nresult interrupted after %.1fs:\n", res.Elapsed.Seconds())
	}
	fmt.Fprintf(&b, "\n%-12s %9s %8s %7s %6s %11s %7s %6s\n", "phase", "gCO2/kWh", "exports", "served", "shed", "claim reads", "served", "shed")
	for _, ph := range res.Phases {
		fmt.Fprintf(&b, "%-12s %9v %8d %7d %6d %11d %7d %6d\n", ph.Name, ph.Intensity, ph.Exports.Sent, ph.Exports.Served,
			ph.Exports.Shed, ph.ClaimReads.Sent, ph.ClaimReads.Served, ph.ClaimReads.Shed)
	}
	for _, ph := range res.Phases {
		if n := ph.Exports.Failed + ph.ClaimReads.Failed; n > 0 {
			fmt.Fprintf(&b, "%s: %d requests got no usable answer (timeouts, connection errors, other statuses)\n", ph.Name, n)
		}
	}
	p.printf("%s", b.String())
}

// carbonConclusion says in words what the table shows.
func (p *printer) carbonConclusion(res *CarbonResult) {
	if len(res.Phases) < carbonPhases {
		return
	}
	high, after := res.Phases[1], res.Phases[2]
	var b strings.Builder
	fmt.Fprintf(&b, "\nwhile the grid reported %v gCO2/kWh (above %d), sluice shed %d of %d exports (503, reason shed);\n",
		high.Intensity, carbonLine, high.Exports.Shed, high.Exports.Sent)
	fmt.Fprintf(&b, "  of those sent %v or more after the rise (sluice reads the grid every %v): %d of %d shed.\n",
		settle, signalEvery, high.SettledExports.Shed, high.SettledExports.Sent)
	fmt.Fprintf(&b, "once it fell to %v: %d of %d exports served (from %v after the fall: %d of %d).\n",
		after.Intensity, after.Exports.Served, after.Exports.Sent, settle, after.SettledExports.Served, after.SettledExports.Sent)
	reads, served := 0, 0
	for _, ph := range res.Phases {
		reads, served = reads+ph.ClaimReads.Sent, served+ph.ClaimReads.Served
	}
	fmt.Fprintf(&b, "claim reads (normal priority) were never shed: %d of %d served.\n", served, reads)
	b.WriteString("\nnext: the overview's signals and degraded, and the sluice_signal_* metrics, show the same live\n")
	b.WriteString("  (docs/operations.md, \"Degrading on purpose\"; docs/configuration.md, \"Signals\")\n")
	p.printf("%s", b.String())
}
