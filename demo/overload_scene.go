package demo

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sluice-rl/sluice/internal/fixedcap"
)

// The claims service of the overload demo and sluice's protect block.
const (
	workers          = 8                     // requests the claims service works on at once
	serviceTime      = 20 * time.Millisecond // one request's work on an ordinary day
	monthEndSlowdown = 4                     // month-end analysis makes every request 4× as slow
	ceiling          = 24                    // protect.max_in_flight
	latencyTarget    = 150 * time.Millisecond
	// objective is the claim reads' latency objective at the caller: p99
	// within 250ms. latency_target aims the service's own p99 below it,
	// so that the limit moves before the objective is at risk.
	objective = 250 * time.Millisecond
)

// overloadScene is the claims service of fixed capacity, sluice in front
// of it and the callers.
type overloadScene struct {
	*scene
	model    *fixedcap.Service
	classes  []*loadClass
	metrics  string        // sluice's metrics URL
	progress time.Duration // OverloadOptions.Progress: the window of each progress line's p99
}

// setUpOverload opens the listeners and builds the claims service, sluice
// and the callers. Nothing is served yet.
func setUpOverload(opts OverloadOptions) (*overloadScene, error) {
	model, err := fixedcap.New(fixedcap.Config{Capacity: workers, ServiceTime: serviceTime})
	if err != nil {
		return nil, fmt.Errorf("demo: claims service: %w", err)
	}
	s := &scene{duration: opts.Calm + opts.MonthEnd + opts.After}
	if err := s.open("sluice-overload.yaml", overloadYAML, wideTransport); err != nil {
		return nil, err
	}
	s.claimsSrv = &http.Server{Handler: model, ReadHeaderTimeout: requestTimeout}
	client := &http.Client{Transport: s.client, Timeout: requestTimeout}
	return &overloadScene{scene: s, model: model, classes: loadClasses(client, s.sluiceURL),
		metrics: s.adminURL + "/metrics", progress: opts.Progress}, nil
}

// wideTransport is newTransport with room for the few dozen requests in
// flight at month-end, so that connections are reused, not redialled.
func wideTransport() *http.Transport {
	t := newTransport()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 128, 128
	return t
}

// overloadYAML is sluice's configuration for the overload demo.
func overloadYAML(listen, upstream, admin string) string {
	return fmt.Sprintf(`listen: %-26s# where the callers connect
upstream: %-24s# the claims service: %d requests at once, %v each
admin: %-27s# metrics, health, reload

protect:
  max_in_flight: %-17d# the ceiling: never more at the claims service at once
  adaptive:
    min_in_flight: %-15d# the service's own workers: fewer would leave some idle
    latency_target: %-14s# the service's p99 aim, below the claim reads' %v objective
  queue:
    max_wait: 1s
    max_length: 200
  shed_from: 0.8                  # from 80%% of the limit on: exports shed, reports off

rules:
  - name: claim-reads
    match: { path: /claims, methods: [GET] }
    priority: critical            # partners reading a claim: first, never shed
  - name: reports
    match: { path: /reports }
    priority: low
    degrade: true                 # month-end reports: switched off while the service is busy
  - name: exports
    match: { path: /exports }
    priority: low                 # bulk exports: shed first
  # new claims (POST /claims) match no rule with a priority: normal, they wait in the queue
`, listen, upstream, workers, serviceTime, admin, ceiling, workers, latencyTarget.String(), objective)
}
