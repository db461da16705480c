// Package promlimit is a prometheus.Collector for Go programs that use
// sluice's middleware: it is fed by httplimit's reports (OnDecision,
// OnResponse) and exports the series the gateway exports, under the same
// names and labels, so that one dashboard reads both. Package httplimit
// itself stays standard library only; this package is where Prometheus
// comes in.
//
//	m := promlimit.New(promlimit.Options{})
//	prometheus.MustRegister(m)
//	lim, err := httplimit.New(httplimit.Options{Policy: pol, Store: st,
//		OnDecision: m.OnDecision, OnResponse: m.OnResponse})
//
// Label values come only from the policy (rule names, client ids) and a
// few fixed words, as in the gateway: no caller can create new series.
package promlimit

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
)

// Options configure a Collector. The zero value is ready to use.
type Options struct {
	// Namespace starts every series' name. Default "sluice", the
	// gateway's: sluice_requests_total.
	Namespace string
	// ConstLabels are added to every series (such as the service's name).
	// Default none.
	ConstLabels prometheus.Labels
	// Store, if it is a *failover.Store (store/storeopen opens one for
	// store type redis), has its state and counters exported too:
	// store_degraded, store_shared_errors_total,
	// store_cached_rejections_total, store_degraded_decisions_total.
	// Default nil: none.
	Store store.Store
}

// Collector collects an httplimit.Limiter's decisions and responses. Feed
// it by setting httplimit.Options.OnDecision to its OnDecision and
// OnResponse to its OnResponse, and register it once. It is safe for
// concurrent use.
type Collector struct {
	requests      *prometheus.CounterVec
	responses     *prometheus.CounterVec
	decision      prometheus.Histogram
	held          prometheus.Histogram
	storeErrors   prometheus.Counter
	storeSeconds  prometheus.Histogram
	queueWait     *prometheus.HistogramVec
	handlerStatus *prometheus.CounterVec
	handlerTime   prometheus.Histogram
	failover      []prometheus.Collector
}

var _ prometheus.Collector = (*Collector)(nil)

// New returns a Collector with every series at zero.
func New(opts Options) *Collector {
	if opts.Namespace == "" {
		opts.Namespace = "sluice"
	}
	f := factory{opts}
	c := &Collector{
		requests: f.counterVec("requests_total",
			"Rule decisions by rule, client id and decision (allowed, delayed, limited, shadow_limited, exempt, store_error, not_spent).",
			"rule", "client", "decision"),
		responses: f.counterVec("responses_total",
			"Requests by what the limiter did: passed, or answered itself with 400, 401, 403 (the client or its address is blocked), 429 or 503, or 499 (the caller went away while it waited).",
			"client", "code"),
		decision: f.histogram("decision_seconds", "Time to decide one request (identify, match, store).",
			[]float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1}),
		held: f.histogram("delay_seconds", "Time a request was held for its turn by rules with a delay.",
			[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 3600}),
		storeErrors: f.counter("store_errors_total", "Requests the store could not decide."),
		storeSeconds: f.histogram("store_seconds", "Latency of the shared store (Redis), one observation per batch of decisions (ObserveShared).",
			[]float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1}),
		queueWait: f.histogramVec("queue_wait_seconds",
			"Time each request the throttle admitted waited in its queue (0 for one admitted at once), by priority.",
			[]float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}, "priority"),
		handlerStatus: f.counterVec("handler_responses_total",
			"The protected handler's answers by status code (other: outside 100-599); the limiter's own answers are responses_total.",
			"code"),
		handlerTime: f.histogram("handler_seconds",
			"Time from passing a request on to the handler's status (however fast the caller then reads the body).",
			[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}),
	}
	if fs, ok := opts.Store.(*failover.Store); ok {
		c.failover = f.failover(fs)
	}
	return c
}

// Describe sends the descriptions of every series.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.all() {
		m.Describe(ch)
	}
}

// Collect sends every series' current value.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.all() {
		m.Collect(ch)
	}
}

func (c *Collector) all() []prometheus.Collector {
	return append([]prometheus.Collector{c.requests, c.responses, c.decision, c.held, c.storeErrors, c.storeSeconds,
		c.queueWait, c.handlerStatus, c.handlerTime}, c.failover...)
}

// OnDecision records one request's decision: httplimit.Options.OnDecision.
func (c *Collector) OnDecision(_ *http.Request, rep *httplimit.Report) {
	c.decision.Observe(rep.Latency.Seconds())
	if rep.Held > 0 {
		c.held.Observe(rep.Held.Seconds())
	}
	for _, r := range rep.Rules {
		c.requests.WithLabelValues(r.Rule, rep.Client, r.Outcome.String()).Inc()
	}
	c.responses.WithLabelValues(rep.Client, responseCode(rep.Status)).Inc()
	if rep.Throttled && rep.Status == 0 {
		c.queueWait.WithLabelValues(rep.Priority.String()).Observe(rep.QueueWait.Seconds())
	}
	if rep.Err != nil && !errors.Is(rep.Err, context.Canceled) { // a caller that left is no store failure
		c.storeErrors.Inc()
	}
}

// OnResponse records the protected handler's answer to a request the
// limiter passed on: httplimit.Options.OnResponse. The limiter's own
// answers are OnDecision's.
func (c *Collector) OnResponse(_ *http.Request, resp *httplimit.Response) {
	if !resp.Passed {
		return
	}
	code := "other"
	if resp.Status >= 100 && resp.Status <= 599 {
		code = strconv.Itoa(resp.Status)
	}
	c.handlerStatus.WithLabelValues(code).Inc()
	c.handlerTime.Observe(resp.FirstByte.Seconds())
}

// ObserveShared records the time of one batch of decisions asked of the
// shared store: storeopen.Options.ObserveShared.
func (c *Collector) ObserveShared(d time.Duration) { c.storeSeconds.Observe(d.Seconds()) }

// responseCode is responses_total's code label for a Report.Status.
func responseCode(status int) string {
	switch status {
	case 0:
		return "passed"
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable, httplimit.StatusClientGone:
		return strconv.Itoa(status)
	}
	return "other"
}
