package demo

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Phases of the overload demo.
const (
	phaseCalm     = 0
	phaseMonthEnd = 1
	phaseAfter    = 2
)

var phaseNames = [...]string{"calm", "month-end", "after"}

// loadClass is one kind of request: its callers send at a fixed rate per
// phase, whatever the answers (open loop: partners do not slow down
// because the service does).
type loadClass struct {
	name, priority string
	degrade        bool
	method, path   string
	perSec         [3]float64 // requests a second in each phase
	client         *http.Client
	base           string

	mu        sync.Mutex
	res       ClassResult
	latencies [3][]time.Duration // of the 2xx answers, by the phase each request was sent in
	window    []time.Duration    // of the 2xx answers since the last takeWindow
}

// loadClasses are the demo's callers: claim reads steady all along,
// reports and exports surging at month-end.
func loadClasses(client *http.Client, base string) []*loadClass {
	classes := []*loadClass{
		{name: "claim reads", priority: "critical", method: http.MethodGet, path: "/claims/CLM-", perSec: [3]float64{40, 40, 40}},
		{name: "new claims", priority: "normal", method: http.MethodPost, path: "/claims?n=", perSec: [3]float64{12, 12, 12}},
		{name: "reports", priority: "low", degrade: true, method: http.MethodGet, path: "/reports/", perSec: [3]float64{3, 25, 3}},
		{name: "exports", priority: "low", method: http.MethodGet, path: "/exports/", perSec: [3]float64{6, 40, 6}},
	}
	for _, c := range classes {
		c.client, c.base = client, base
	}
	return classes
}

// phaseAt is the phase at elapsed time e.
func phaseAt(opts OverloadOptions, e time.Duration) int {
	switch {
	case e < opts.Calm:
		return phaseCalm
	case e < opts.Calm+opts.MonthEnd:
		return phaseMonthEnd
	}
	return phaseAfter
}

// run sends from start on for total, at the rate of the phase phase gives
// for each moment, until then or until ctx ends; every request runs on its
// own goroutine and is waited for, so that every request sent has an
// outcome.
func (c *loadClass) run(ctx context.Context, total time.Duration, phase func(time.Duration) int, start time.Time) {
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	reqCtx := context.WithoutCancel(ctx)
	at := time.Duration(0)
	for n := 1; at < total; n++ {
		if !waitUntil(ctx, timer, start.Add(at)) {
			return
		}
		p := phase(at)
		wg.Go(func() { c.send(reqCtx, n, p) })
		at += time.Duration(float64(time.Second) / c.perSec[p])
	}
}

// send sends request number n, of phase, and records its outcome.
func (c *loadClass) send(ctx context.Context, n, phase int) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, c.method, c.base+c.path+strconv.Itoa(1000+n%1000), nil)
	if err != nil {
		c.record(0, nil, 0, phase)
		return
	}
	t0 := time.Now()
	resp, err := c.client.Do(req)
	if err != nil {
		c.record(0, nil, 0, phase)
		return
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close() // a body read to its end closes cleanly
	if err != nil {
		c.record(0, nil, 0, phase)
		return
	}
	c.record(resp.StatusCode, body, time.Since(t0), phase)
}

// record counts one outcome: status 0 is no answer. sluice's 503 names
// its reason in the problem body.
func (c *loadClass) record(status int, body []byte, latency time.Duration, phase int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.res.Sent++
	switch {
	case status >= 200 && status < 300:
		c.res.Passed++
		c.latencies[phase] = append(c.latencies[phase], latency)
		c.window = append(c.window, latency)
	case status == http.StatusServiceUnavailable && bytes.Contains(body, []byte(`"reason":"degraded"`)):
		c.res.Degraded++
	case status == http.StatusServiceUnavailable && bytes.Contains(body, []byte(`"reason":`)):
		c.res.Shed++
	default:
		c.res.Failed++
	}
}

// snapshot returns the class's figures so far.
func (c *loadClass) snapshot() ClassResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.res
	r.Name, r.Priority, r.Degrade, r.Queued = c.name, c.priority, c.degrade, -1
	var all []time.Duration
	for p, lat := range c.latencies {
		all = append(all, lat...)
		lat = slices.Clone(lat)
		slices.Sort(lat)
		r.PhaseP99[p] = percentile(lat, 99)
	}
	slices.Sort(all)
	r.P50, r.P99 = percentile(all, 50), percentile(all, 99)
	return r
}

// takeWindow returns the p99 of the 2xx answers since its last call (0 for
// none) and starts a new window.
func (c *loadClass) takeWindow() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	slices.Sort(c.window)
	p99 := percentile(c.window, 99)
	c.window = c.window[:0]
	return p99
}

// play runs the phases: the callers send, the claims service slows down
// for the month-end, and every opts.Progress the limit is sampled and
// printed.
func (o *overloadScene) play(ctx context.Context, opts OverloadOptions, out *printer) *OverloadResult {
	cctx, stopCallers := context.WithCancel(ctx)
	defer stopCallers()
	start := time.Now()
	total := opts.Calm + opts.MonthEnd + opts.After
	phase := func(e time.Duration) int { return phaseAt(opts, e) }
	var wg sync.WaitGroup
	for _, c := range o.classes {
		wg.Go(func() { c.run(cctx, total, phase, start) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(opts.Progress)
	defer tick.Stop()
	monthEnd, after := time.NewTimer(opts.Calm), time.NewTimer(opts.Calm+opts.MonthEnd)
	defer monthEnd.Stop()
	defer after.Stop()
	res := &OverloadResult{Ceiling: ceiling}
	now := phaseCalm
	gwStopped := o.gwStopped
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-monthEnd.C:
			now = o.enter(phaseMonthEnd, time.Since(start), out)
		case <-after.C:
			now = o.enter(phaseAfter, time.Since(start), out)
		case <-tick.C:
			res.Limits = append(res.Limits, o.sample(ctx, time.Since(start), now, out))
		case <-gwStopped:
			stopCallers() // nobody would answer them
			gwStopped = nil
		}
	}
	res.Elapsed, res.Interrupted = time.Since(start), cctx.Err() != nil
	o.fillResult(ctx, res)
	return res
}
