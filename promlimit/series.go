package promlimit

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/store/failover"
)

// Series are the series of a limiter's decisions, declared once for every
// front that exports them: a Collector's and the gateway's (the gateway
// adds the series of its own, the upstream's among them). One name, one
// help text, one meaning each (docs/metrics.md). It is a
// prometheus.Collector, safe for concurrent use.
type Series struct {
	requests     *prometheus.CounterVec
	responses    *prometheus.CounterVec
	decision     prometheus.Histogram
	held         prometheus.Histogram
	storeErrors  prometheus.Counter
	storeSeconds prometheus.Histogram
	queueWait    *prometheus.HistogramVec

	requestsOf  children[requestKey] // requests' children, found per request without the vector's hashing
	responsesOf children[responseKey]
}

var _ prometheus.Collector = (*Series)(nil)

// NewSeries returns the Series with opts' namespace (default "sluice")
// and constant labels, every series at zero; opts.Store is not read
// (FailoverSeries).
func NewSeries(opts Options) *Series {
	f := factory{withDefaults(opts)}
	s := &Series{
		requests: f.counterVec("requests_total",
			"Rule decisions by rule, client id and decision (allowed, limited, shadow_limited, exempt, store_error, not_spent: had room, spent nothing as another rule rejected the request; delayed: allowed after being held for its turn by a rule with a delay).",
			"rule", "client", "decision"),
		responses: f.counterVec("responses_total",
			"Requests by what sluice did: passed, or answered itself with 400, 401, 403 (the client or its address is blocked: nothing counted), 429 or 503, or 499 (the caller went away while its request waited in a queue or was held for its turn: nothing was answered).",
			"client", "code"),
		decision: f.histogram("decision_seconds", "Time to decide one request (identify, match, store).",
			[]float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1}),
		held: f.histogram("delay_seconds",
			"Time a request was held for its turn by rules with a delay, one observation per held request (its caller may have left meanwhile).",
			[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 3600}),
		storeErrors: f.counter("store_errors_total", "Requests the store could not decide (passed with on_failure open, 503 with closed)."),
		storeSeconds: f.histogram("store_seconds", "Latency of the shared store (Redis), one observation per batch of decisions.",
			[]float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1}),
		queueWait: f.histogramVec("queue_wait_seconds",
			"Time each request the throttle (protect) admitted waited in its queue (0 for one admitted at once), by priority.",
			[]float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}, "priority"),
	}
	s.requestsOf.vec, s.responsesOf.vec = s.requests, s.responses
	return s
}

// Describe sends the descriptions of every series.
func (s *Series) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range s.all() {
		m.Describe(ch)
	}
}

// Collect sends every series' current value.
func (s *Series) Collect(ch chan<- prometheus.Metric) {
	for _, m := range s.all() {
		m.Collect(ch)
	}
}

func (s *Series) all() []prometheus.Collector {
	return []prometheus.Collector{s.requests, s.responses, s.decision, s.held, s.storeErrors, s.storeSeconds, s.queueWait}
}

// Observe records one request's decision (httplimit.Report is
// decision.Report, every front's).
func (s *Series) Observe(rep *httplimit.Report) {
	s.decision.Observe(rep.Latency.Seconds())
	if rep.Held > 0 {
		s.held.Observe(rep.Held.Seconds())
	}
	for _, r := range rep.Rules {
		k := requestKey{r.Rule, rep.Client, r.Outcome.String()}
		s.requestsOf.get(k, func() []string { return []string{k.rule, k.client, k.decision} }).Inc()
	}
	k := responseKey{rep.Client, responseCode(rep.Status)}
	s.responsesOf.get(k, func() []string { return []string{k.client, k.code} }).Inc()
	if rep.Throttled && rep.Status == 0 {
		s.queueWait.WithLabelValues(rep.Priority.String()).Observe(rep.QueueWait.Seconds())
	}
	if rep.Err != nil && !errors.Is(rep.Err, context.Canceled) { // a caller that left is no store failure
		s.storeErrors.Inc()
	}
}

// ObserveShared records the time of one batch of decisions asked of the
// shared store: storeopen.Options.ObserveShared.
func (s *Series) ObserveShared(d time.Duration) { s.storeSeconds.Observe(d.Seconds()) }

// responseCode is responses_total's code label for a Report.Status.
// Each is a constant: the label is made per request, and must not
// allocate.
func responseCode(status int) string {
	switch status {
	case 0:
		return "passed"
	case http.StatusBadRequest:
		return "400"
	case http.StatusUnauthorized:
		return "401"
	case http.StatusForbidden:
		return "403"
	case http.StatusTooManyRequests:
		return "429"
	case http.StatusServiceUnavailable:
		return "503"
	case httplimit.StatusClientGone:
		return "499"
	}
	return "other"
}

// FailoverSeries exports a failover store's own state and counters, read
// when collected, so that they never disagree with what the store does:
// store_degraded, store_shared_errors_total, store_cached_rejections_total,
// store_degraded_decisions_total, with opts' namespace and constant labels.
func FailoverSeries(opts Options, fs *failover.Store) []prometheus.Collector {
	f := factory{withDefaults(opts)}
	gauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: f.opts.Namespace, Name: "store_degraded", ConstLabels: f.opts.ConstLabels,
		Help: "1 while the shared store is unreachable and on_failure decides, 0 while counting is shared."},
		func() float64 {
			if fs.Degraded() {
				return 1
			}
			return 0
		})
	counter := func(name, help string, read func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: f.opts.Namespace, Name: name, Help: help, ConstLabels: f.opts.ConstLabels},
			func() float64 { return float64(read()) })
	}
	return []prometheus.Collector{gauge,
		counter("store_shared_errors_total", "Calls to the shared store (Redis) that failed or timed out (a caller that left is none).",
			fs.Stats().SharedErrors.Load),
		counter("store_cached_rejections_total", "Rejections answered locally from the shared store's earlier denial, without asking it.",
			fs.Stats().CachedRejections.Load),
		counter("store_degraded_decisions_total", "Decisions made by the failure policy (on_failure) while the shared store was unreachable.",
			fs.Stats().Degraded.Load)}
}

// withDefaults fills in opts' default namespace.
func withDefaults(opts Options) Options {
	if opts.Namespace == "" {
		opts.Namespace = "sluice"
	}
	return opts
}
