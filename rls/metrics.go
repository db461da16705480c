package rls

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Label values that are not a configured domain or descriptor. They hold
// characters no rule file's path makes at the top level, so that they never
// read as a configured name.
const (
	unknownDomain  = "(unknown)"  // a domain no rule file configures, or none
	overrideLabel  = "(override)" // a descriptor with the request's own limit
	unmatchedLabel = "(none)"     // a descriptor no rule matches
)

// metrics are the server's Prometheus series. Every label value comes from
// the configuration (a domain, a descriptor's configured path) or is one
// of the constants above: a request's values never become a series.
type metrics struct {
	requests    *prometheus.CounterVec // domain, code
	descriptors *prometheus.CounterVec // domain, descriptor, decision
	storeErrors *prometheus.CounterVec // domain
	duration    prometheus.Histogram
	callsReset  *prometheus.CounterVec // reason

	mu      sync.Mutex
	domains map[string]*domainStats // by domain label
	unknown *domainStats            // unknownDomain's
}

// domainStats are a domain's request counters, looked up once per request.
type domainStats struct {
	ok, over, failed prometheus.Counter
	unmatched        prometheus.Counter
	override         *ruleStats
	storeErrors      prometheus.Counter
}

// ruleStats are one rule's descriptor counters.
type ruleStats struct {
	ok, over, shadow, unlimited, replaced prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_rls_requests_total",
			Help: "ShouldRateLimit calls by domain and answer: ok, over_limit, or invalid (refused with a gRPC status).",
		}, []string{"domain", "code"}),
		descriptors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_rls_descriptors_total",
			Help: "Descriptors decided, by domain, configured descriptor path and decision (ok, over_limit, shadow_over_limit, unlimited, replaced).",
		}, []string{"domain", "descriptor", "decision"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_rls_store_errors_total",
			Help: "Descriptors the store could not decide (answered OK with on_failure open, OVER_LIMIT with closed or local).",
		}, []string{"domain"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sluice_rls_request_duration_seconds",
			Help:    "Time to answer a ShouldRateLimit call, store included.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}),
		callsReset: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_rls_calls_reset_total",
			Help: "Calls reset while waiting for their request message, by reason: message_timeout (it did not arrive in time) or evicted (the most calls were waiting, and this one had waited longest).",
		}, []string{"reason"}),
		domains: map[string]*domainStats{},
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.descriptors, m.storeErrors, m.duration)
		reg.MustRegister(m.callsReset)
	}
	m.unknown = m.domain(unknownDomain)
	return m
}

// domain returns the counters of a domain label, made on first use. Only
// configured domains and unknownDomain reach it.
func (m *metrics) domain(label string) *domainStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d := m.domains[label]; d != nil {
		return d
	}
	d := &domainStats{
		ok:          m.requests.WithLabelValues(label, "ok"),
		over:        m.requests.WithLabelValues(label, "over_limit"),
		failed:      m.requests.WithLabelValues(label, "invalid"),
		unmatched:   m.descriptors.WithLabelValues(label, unmatchedLabel, "ok"),
		override:    m.rule(label, overrideLabel),
		storeErrors: m.storeErrors.WithLabelValues(label),
	}
	m.domains[label] = d
	return d
}

// rule returns the counters of one configured descriptor path.
func (m *metrics) rule(domain, label string) *ruleStats {
	return &ruleStats{
		ok:        m.descriptors.WithLabelValues(domain, label, "ok"),
		over:      m.descriptors.WithLabelValues(domain, label, "over_limit"),
		shadow:    m.descriptors.WithLabelValues(domain, label, "shadow_over_limit"),
		unlimited: m.descriptors.WithLabelValues(domain, label, "unlimited"),
		replaced:  m.descriptors.WithLabelValues(domain, label, "replaced"),
	}
}

// bind gives r its domains' counters and every rule of r its own.
func (m *metrics) bind(r *Rules) {
	for domain, n := range r.domains {
		n.stats = m.domain(domain)
		n.walk(func(ru *rule) { ru.stats = m.rule(domain, ru.label) })
	}
}

// walk calls f for every rule under n.
func (n *node) walk(f func(*rule)) {
	if n.rule != nil {
		f(n.rule)
	}
	for _, c := range n.exact {
		c.walk(f)
	}
	for _, w := range n.wildcards {
		w.child.walk(f)
	}
}
