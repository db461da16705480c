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
	latencies []time.Duration
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

// run sends from start on at the rate of each phase until the phases are
// over or ctx ends; every request runs on its own goroutine and is waited
// for, so that every request sent has an outcome.
func (c *loadClass) run(ctx context.Context, opts OverloadOptions, start time.Time) {
	var wg sync.WaitGroup
	defer wg.Wait()
	total := opts.Calm + opts.MonthEnd + opts.After
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	reqCtx := context.WithoutCancel(ctx)
	at := time.Duration(0)
	for n := 1; at < total; n++ {
		if !waitUntil(ctx, timer, start.Add(at)) {
			return
		}
		wg.Go(func() { c.send(reqCtx, n) })
		at += time.Duration(float64(time.Second) / c.perSec[phaseAt(opts, at)])
	}
}

// send sends request number n and records its outcome.
func (c *loadClass) send(ctx context.Context, n int) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, c.method, c.base+c.path+strconv.Itoa(1000+n%1000), nil)
	if err != nil {
		c.record(0, nil, 0)
		return
	}
	t0 := time.Now()
	resp, err := c.client.Do(req)
	if err != nil {
		c.record(0, nil, 0)
		return
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close() // a body read to its end closes cleanly
	if err != nil {
		c.record(0, nil, 0)
		return
	}
	c.record(resp.StatusCode, body, time.Since(t0))
}

// record counts one outcome: status 0 is no answer. sluice's 503 names
// its reason in the problem body.
func (c *loadClass) record(status int, body []byte, latency time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.res.Sent++
	switch {
	case status >= 200 && status < 300:
		c.res.Passed++
		c.latencies = append(c.latencies, latency)
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
	lat := slices.Clone(c.latencies)
	slices.Sort(lat)
	r.P50, r.P99 = percentile(lat, 50), percentile(lat, 99)
	return r
}

// play runs the phases: the callers send, the claims service slows down
// for the month-end, and every opts.Progress the limit is sampled and
// printed.
func (o *overloadScene) play(ctx context.Context, opts OverloadOptions, out *printer) *OverloadResult {
	cctx, stopCallers := context.WithCancel(ctx)
	defer stopCallers()
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range o.classes {
		wg.Go(func() { c.run(cctx, opts, start) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(opts.Progress)
	defer tick.Stop()
	monthEnd, after := time.NewTimer(opts.Calm), time.NewTimer(opts.Calm+opts.MonthEnd)
	defer monthEnd.Stop()
	defer after.Stop()
	res := &OverloadResult{Ceiling: ceiling}
	phase := phaseCalm
	gwStopped := o.gwStopped
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-monthEnd.C:
			phase = o.enter(phaseMonthEnd, time.Since(start), out)
		case <-after.C:
			phase = o.enter(phaseAfter, time.Since(start), out)
		case <-tick.C:
			res.Limits = append(res.Limits, o.sample(ctx, time.Since(start), phase, out))
		case <-gwStopped:
			stopCallers() // nobody would answer them
			gwStopped = nil
		}
	}
	res.Elapsed, res.Interrupted = time.Since(start), cctx.Err() != nil
	o.fillResult(ctx, res)
	return res
}
