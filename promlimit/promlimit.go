// Package promlimit is a prometheus.Collector for Go programs that use
// sluice's middleware: it is fed by httplimit's reports (OnDecision,
// OnResponse) and exports the series the gateway exports, under the same
// names and labels, so that one dashboard reads both. Those series are
// declared once, here (Series, FailoverSeries), and the gateway exports
// them through this package too. Package httplimit
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
	"net/http"
	"strconv"

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
	// Store, if it is a *failover.Store (config/storeopen opens one for
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
	*Series       // the decisions' series, the gateway's too
	handlerStatus *prometheus.CounterVec
	handlerTime   prometheus.Histogram
	failover      []prometheus.Collector
}

var _ prometheus.Collector = (*Collector)(nil)

// New returns a Collector with every series at zero.
func New(opts Options) *Collector {
	opts = withDefaults(opts)
	f := factory{opts}
	c := &Collector{
		Series: NewSeries(opts),
		handlerStatus: f.counterVec("handler_responses_total",
			"The protected handler's answers by status code (other: outside 100-599); the limiter's own answers are responses_total.",
			"code"),
		handlerTime: f.histogram("handler_seconds",
			"Time from passing a request on to the handler's status (however fast the caller then reads the body).",
			[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}),
	}
	if fs, ok := opts.Store.(*failover.Store); ok {
		c.failover = FailoverSeries(opts, fs)
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
	return append([]prometheus.Collector{c.Series, c.handlerStatus, c.handlerTime}, c.failover...)
}

// OnDecision records one request's decision: httplimit.Options.OnDecision.
func (c *Collector) OnDecision(_ *http.Request, rep *httplimit.Report) { c.Observe(rep) }

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
