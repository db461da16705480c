package gateway

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/buildinfo"
	"github.com/sluice-rl/sluice/live"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/promlimit"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/throttle"
)

// metrics are the gateway's Prometheus series. Label values come only from
// the configuration (rule names, client ids) and a few fixed words, so no
// caller can create new series: unknown callers are all "unknown".
type metrics struct {
	registry *prometheus.Registry
	// decisions are the series every front exports (requests, responses,
	// decision and delay times, store errors and latency, queue waits),
	// declared once in package promlimit.
	decisions     *promlimit.Series
	reloads       *prometheus.CounterVec
	lastReload    prometheus.Gauge       // when the configuration in force was loaded
	upstreamFails *prometheus.CounterVec // by upstream
	notRouted     prometheus.Counter
	callerErrors  *prometheus.CounterVec
	loops         prometheus.Counter
	unknownKeys   prometheus.Counter
	renewals      *prometheus.CounterVec

	upstreamSeconds   *prometheus.HistogramVec // by upstream
	upstreamResponses *prometheus.CounterVec   // by upstream, code

	// pressured counts the requests refused under the gateway's Pressure
	// (the degrade switch, a signal above its line), by priority and
	// reason (degraded, shed): sluice_shed_total adds them to protect's.
	pressured [4][2]atomic.Uint64
}

func newMetrics() *metrics {
	m := &metrics{
		registry:  prometheus.NewRegistry(),
		decisions: promlimit.NewSeries(promlimit.Options{}),
		reloads: counterVec("sluice_reloads_total",
			"Configuration reloads by result (ok, failed).",
			"result"),
		lastReload: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_config_last_reload_success_timestamp_seconds",
			Help: "When the configuration in force was loaded, at start or by the last successful reload, in seconds since the Unix epoch."}),
		upstreamFails: counterVec("sluice_upstream_errors_total",
			"Requests answered 502 (upstream unreachable) or 504 (no answer within server.upstream_timeout), by upstream (the service's name).",
			"upstream"),
		notRouted: counter("sluice_unrouted_total",
			"Requests answered 404 because no service of the upstreams list matches their host and path; nothing is counted for them."),
		callerErrors: counterVec("sluice_caller_errors_total",
			"Requests the caller did not complete, by reason: aborted (went away), body_timeout (408), malformed_body (400).",
			"reason"),
		unknownKeys: counter("sluice_unknown_keys_total",
			"Requests that sent an access key that is no listed client's and were counted as anonymous (clients.unknown: anonymous)."),
		loops: counter("sluice_loops_total",
			"Requests answered 508 because they came back from the upstream (upstream leads to sluice itself)."),
		renewals: counterVec("sluice_lease_renewals_total",
			"Periodic renewal of the concurrency leases of requests in flight: leases renewed, leases lost (expired before it, so their slots may have gone to other requests), and renewals failed (the store could not be asked; its leases are tried again next time).",
			"result"),
		upstreamSeconds: histogramVec("sluice_upstream_seconds",
			"The upstream's time to its response headers, by upstream: from passing a request on, less the time it waited for the caller's body (however fast the caller sends the body, or then reads the answer).",
			[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}, "upstream"),
		upstreamResponses: counterVec("sluice_upstream_responses_total",
			"The upstream's answers by upstream and status code (other: outside 100-599); the gateway's own 502 and 504 are sluice_upstream_errors_total.",
			"upstream", "code"),
	}
	bi := buildinfo.Read()
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sluice_build_info",
		Help: "Always 1; the labels say which sluice runs: module version, VCS revision (\"\" when not recorded) and Go version.",
	}, []string{"version", "revision", "goversion"})
	build.WithLabelValues(bi.Version, bi.Revision, bi.GoVersion).Set(1)
	m.registry.MustRegister(build, m.decisions, m.reloads, m.lastReload, m.upstreamFails, m.notRouted,
		m.callerErrors, m.loops, m.unknownKeys, m.renewals, m.upstreamSeconds, m.upstreamResponses,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("failed")
	for _, reason := range []string{"aborted", "body_timeout", "malformed_body"} {
		m.callerErrors.WithLabelValues(reason)
	}
	for _, result := range []string{"renewed", "lost", "failed"} {
		m.renewals.WithLabelValues(result)
	}
	return m
}

// loaded records that the configuration in force was loaded at t.
func (m *metrics) loaded(t time.Time) {
	m.lastReload.Set(float64(t.UnixNano()) / 1e9)
}

// counter, counterVec and histogramVec make the gateway's own series, the
// options written once.
func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}

// observeRenewal records what one renewal of the leases in flight did.
func (m *metrics) observeRenewal(rep store.RenewReport) {
	m.renewals.WithLabelValues("renewed").Add(float64(rep.Renewed))
	m.renewals.WithLabelValues("lost").Add(float64(rep.Lost))
	if rep.Err != nil {
		m.renewals.WithLabelValues("failed").Inc()
	}
}

// observe records one request's report: the decisions' series, and the
// gateway's own (unknown keys, refusals under its Pressure).
func (m *metrics) observe(rep *decision.Report) {
	m.decisions.Observe(rep)
	if rep.UnknownKey {
		m.unknownKeys.Inc()
	}
	if !rep.Throttled && rep.Status == http.StatusServiceUnavailable {
		if n := m.pressure(rep.Priority, rep.Refusal); n != nil {
			n.Add(1)
		}
	}
}

// pressure is the count of refusals under the Pressure of priority p for
// reason r, or nil for a reason the Pressure never gives.
func (m *metrics) pressure(p throttle.Priority, r throttle.Reason) *atomic.Uint64 {
	i := min(max(int(p-throttle.Low), 0), len(m.pressured)-1)
	switch r {
	case throttle.ReasonDegraded:
		return &m.pressured[i][0]
	case throttle.ReasonShed:
		return &m.pressured[i][1]
	}
	return nil
}

// anyPressured reports whether the Pressure has refused a request.
func (m *metrics) anyPressured() bool {
	for i := range m.pressured {
		if m.pressured[i][0].Load() > 0 || m.pressured[i][1].Load() > 0 {
			return true
		}
	}
	return false
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// liveCollector reads the live state (live.go) when metrics are scraped,
// so that a dashboard elsewhere can alert before a partner is refused:
// the share of the limit each listed caller uses, the findings by kind,
// and the limit configured per rule and source. Its labels come from the
// configuration only: a listed caller without a client id counts under
// "anonymous", the highest share of them all.
type liveCollector struct{ g *Gateway }

var (
	usedDesc = prometheus.NewDesc("sluice_limit_used_ratio",
		"Share of its limit (0 to 1) the caller uses now, per rule and client, for the callers the live view lists (live.top per rule: the most refused and the closest to their limit); callers without a client id are one series, anonymous, the highest share among them.",
		[]string{"rule", "client"}, nil)
	findingsDesc = prometheus.NewDesc("sluice_findings",
		"Findings in force over live.period, by kind: retries_too_soon, limit_too_low, shared_address, separate_counters (see docs/operations.md).",
		[]string{"kind"}, nil)
	limitDesc = prometheus.NewDesc("sluice_limit",
		"The limit configured per rule and where it comes from: source rule (the rule's own), plan:NAME or client:ID (the file's override), override:ID (a runtime override of a client); requests per window (the burst for the bucket algorithms), or slots for a concurrency rule.",
		[]string{"rule", "source"}, nil)
)

var findingKinds = []string{live.RetriesTooSoon, live.LimitTooLow, live.SharedAddress, live.SeparateCounters}

func (c liveCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- usedDesc
	ch <- findingsDesc
	ch <- limitDesc
}

func (c liveCollector) Collect(ch chan<- prometheus.Metric) {
	g := c.g
	cfg := g.config()
	snap := g.live.Load().Current(g.opts.Clock.Now(), live.Inputs{OnFailure: cfg.Store.OnFailure.String()})
	for _, r := range snap.Rules {
		used := map[string]float64{}
		for _, e := range r.Top {
			client := e.Client
			if _, ok := cfg.Compiled.CallerByID(client); !ok {
				client = policy.AnonymousPlan
			}
			used[client] = max(used[client], e.Used)
		}
		for client, u := range used {
			ch <- prometheus.MustNewConstMetric(usedDesc, prometheus.GaugeValue, u, r.Name, client)
		}
	}
	counts := map[string]int{}
	for _, f := range snap.Findings {
		counts[f.Kind]++
	}
	for _, k := range findingKinds {
		ch <- prometheus.MustNewConstMetric(findingsDesc, prometheus.GaugeValue, float64(counts[k]), k)
	}
	collectLimits(ch, g.snap.Load().front.Settings.Policy) // the limits in force: schedule and overrides too
}

// collectLimits sends the limit of each rule of pol, its own and each
// plan's or client's override of it, a runtime override of a client
// included (policy.Caller.Source).
func collectLimits(ch chan<- prometheus.Metric, pol *policy.Compiled) {
	callers := []*policy.Caller{pol.Anonymous()}
	for _, cl := range pol.Policy().Clients.List {
		if c, ok := pol.CallerByID(cl.ID); ok {
			callers = append(callers, c)
		}
	}
	for i := range pol.Rules() {
		rule := pol.Rule(i)
		if rule.Classifies() {
			continue
		}
		sent := map[string]bool{"rule": true}
		ch <- prometheus.MustNewConstMetric(limitDesc, prometheus.GaugeValue, float64(limitOf(pol.Unidentified(), i)), rule.Name, "rule")
		for _, c := range callers {
			if c == nil {
				continue
			}
			if src := c.Source(i); src != "" && !sent[src] {
				sent[src] = true
				ch <- prometheus.MustNewConstMetric(limitDesc, prometheus.GaugeValue, float64(limitOf(c, i)), rule.Name, src)
			}
		}
	}
}

// limitOf is the limit rule i applies to c as RateLimit-Policy's q
// states it: the rate of a window algorithm, the burst of a bucket one,
// the slots of a concurrency rule.
func limitOf(c *policy.Caller, i int) int64 {
	if n := c.Concurrency(i); n > 0 {
		return n
	}
	l := c.Limit(i)
	if l.Algorithm().HasBurst() {
		return l.Burst()
	}
	return l.Rate()
}
