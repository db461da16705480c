package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The carbon demo's grid, sluice's line and the callers' pace.
const (
	carbonLine   = 400                    // protect.signals[0].above, gCO2/kWh
	signalEvery  = time.Second            // how often sluice reads the grid
	settle       = 2 * signalEvery        // by then sluice has read a new intensity
	carbonPace   = 200 * time.Millisecond // each caller: one request every 200ms
	claimReads   = 0                      // caller index
	exports      = 1
	carbonPhases = 3
)

// intensities are what the stand-in grid reports in each phase.
var intensities = [carbonPhases]float64{210, 460, 280}

var carbonPhaseNames = [carbonPhases]string{"clean", "high", "clean again"}

// carbonScene is the claims service, sluice in front of it, the stand-in
// grid sluice reads and what the callers got.
type carbonScene struct {
	*scene
	gridLn    net.Listener
	gridSrv   *http.Server
	gridURL   string
	intensity atomic.Uint64 // math.Float64bits of what the grid reports
	gridDone  chan struct{}
	gridErr   error // valid once gridDone is closed
	callers   *http.Client
	phases    [carbonPhases]time.Duration // when each phase starts, from the callers' start

	mu        sync.Mutex
	counts    [carbonPhases][2]Counts
	settled   [carbonPhases][2]Counts
	second    [2]Counts // the current second's, for the progress line
	firstShed *Answer
}

// setUpCarbon opens the listeners (the grid's first, so that sluice's
// configuration names it) and builds the services and sluice. Nothing is
// served yet.
func setUpCarbon(opts CarbonOptions) (*carbonScene, error) {
	gridLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo: listen on 127.0.0.1: %w", err)
	}
	c := &carbonScene{scene: &scene{duration: opts.Clean + opts.High + opts.After}, gridLn: gridLn,
		gridURL: "http://" + gridLn.Addr().String() + "/carbon-intensity",
		phases:  [carbonPhases]time.Duration{0, opts.Clean, opts.Clean + opts.High}}
	c.setIntensity(intensities[0])
	c.gridSrv = &http.Server{Handler: http.HandlerFunc(c.grid), ReadHeaderTimeout: requestTimeout}
	yaml := func(listen, upstream, admin string) string { return carbonYAML(listen, upstream, admin, c.gridURL) }
	if err := c.open("sluice-carbon.yaml", yaml, newTransport); err != nil {
		_ = gridLn.Close()
		return nil, err
	}
	c.claimsSrv = &http.Server{Handler: exportsService(), ReadHeaderTimeout: requestTimeout}
	c.callers = &http.Client{Transport: c.client, Timeout: requestTimeout}
	return c, nil
}

// carbonYAML is sluice's configuration for the carbon demo.
func carbonYAML(listen, upstream, admin, grid string) string {
	return fmt.Sprintf(`listen: %-26s# where the callers connect
upstream: %-24s# the claims service
admin: %-27s# metrics, health, the overview

protect:
  signals:                        # less low-value work while the grid's power is dirty
    - name: grid-carbon
      url: %s
      every: %-21s# the stand-in answers {"value": N} in gCO2/kWh
      above: %-21d# above it: low-priority requests are shed (503)

rules:
  - name: exports
    match: { path: /exports }
    priority: low                 # bulk exports: they can wait for cleaner power
  # claim reads (GET /claims) match no rule with a priority: normal, never shed by the signal
`, listen, upstream, admin, grid, signalEvery, carbonLine)
}

// exportsService is the claims service of the carbon demo: it answers a
// claim read or an export at once.
func exportsService() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /claims/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"id":%q,"status":"repair approved"}`+"\n", r.PathValue("id"))
	})
	mux.HandleFunc("GET /exports/{n}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/csv")
		_, _ = io.WriteString(w, "claim,partner,status\nCLM-1001,partner-a,repair approved\n")
	})
	return mux
}

// grid answers what the stand-in grid reports now.
func (c *carbonScene) grid(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"value": %v, "unit": "gCO2/kWh"}`+"\n", c.gridIntensity())
}

func (c *carbonScene) setIntensity(v float64) { c.intensity.Store(math.Float64bits(v)) }
func (c *carbonScene) gridIntensity() float64 { return math.Float64frombits(c.intensity.Load()) }

// startGrid serves the stand-in grid until stopGrid.
func (c *carbonScene) startGrid() {
	c.gridDone = make(chan struct{})
	go func() {
		defer close(c.gridDone)
		if err := c.gridSrv.Serve(c.gridLn); !errors.Is(err, http.ErrServerClosed) {
			c.gridErr = fmt.Errorf("demo: grid: %w", err)
		}
	}()
}

// stopGrid shuts the stand-in grid down, once sluice no longer reads it.
func (c *carbonScene) stopGrid() error {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	err := c.gridSrv.Shutdown(ctx)
	<-c.gridDone
	return errors.Join(err, c.gridErr)
}

// call sends one request of caller kind every carbonPace from start on,
// for total, until ctx ends.
func (c *carbonScene) call(ctx context.Context, kind int, start time.Time, total time.Duration) {
	path := [2]string{"/claims/CLM-", "/exports/"}[kind]
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for n := 0; time.Duration(n)*carbonPace < total; n++ {
		if !waitUntil(ctx, timer, start.Add(time.Duration(n)*carbonPace)) {
			return
		}
		at := time.Since(start)
		c.record(kind, at, c.get(ctx, path+strconv.Itoa(1000+n)))
	}
}

// get sends GET path to sluice and returns the answer; nil for none.
func (c *carbonScene) get(ctx context.Context, path string) *Answer {
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodGet, c.sluiceURL+path, nil)
	if err != nil {
		return nil
	}
	resp, err := c.callers.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil
	}
	return &Answer{StatusCode: resp.StatusCode, Status: resp.Status, Header: resp.Header, Body: body}
}

// record counts an answer to caller kind's request sent at at.
func (c *carbonScene) record(kind int, at time.Duration, a *Answer) {
	phase := c.phaseAt(at)
	var reason string
	if a != nil && a.StatusCode == http.StatusServiceUnavailable {
		var p struct{ Reason string }
		_ = json.Unmarshal(a.Body, &p)
		reason = p.Reason
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	tallies := []*Counts{&c.counts[phase][kind], &c.second[kind]}
	if at-c.phases[phase] >= settle {
		tallies = append(tallies, &c.settled[phase][kind])
	}
	for _, t := range tallies {
		t.Sent++
		switch {
		case a != nil && a.StatusCode/100 == 2:
			t.Served++
		case reason != "":
			t.Shed++
		default:
			t.Failed++
		}
	}
	if reason != "" && kind == exports && c.firstShed == nil {
		a.At, a.Request = at, int(at/carbonPace)+1
		c.firstShed = a
	}
}

// phaseAt is the phase at at, from the callers' start.
func (c *carbonScene) phaseAt(at time.Duration) int {
	p := 0
	for i, from := range c.phases {
		if at >= from {
			p = i
		}
	}
	return p
}

// takeSecond returns the current second's counts and starts the next.
func (c *carbonScene) takeSecond() [2]Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.second
	c.second = [2]Counts{}
	return s
}

// sluiceView is what sluice's overview says of the signal now: whether it
// degrades, and the value it read; ok false when it cannot be read.
func (c *carbonScene) sluiceView(ctx context.Context) (degraded bool, value float64, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.adminURL+"/api/v1/overview", nil)
	if err != nil {
		return false, 0, false
	}
	resp, err := c.callers.Do(req)
	if err != nil {
		return false, 0, false
	}
	defer resp.Body.Close()
	var ov struct {
		Degraded struct{ On bool }
		Signals  []struct{ Value *float64 }
	}
	if json.NewDecoder(resp.Body).Decode(&ov) != nil || len(ov.Signals) == 0 || ov.Signals[0].Value == nil {
		return ov.Degraded.On, 0, false
	}
	return ov.Degraded.On, *ov.Signals[0].Value, true
}
