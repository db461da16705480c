package gateway

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/throttle"
)

// applyProtect puts cfg's protect block in force on the gateway's one
// Throttle and returns it, or nil when cfg has none. The Throttle is made
// the first time a configuration has a protect block and Updated by every
// later one, never replaced: a new one would start from nothing in flight
// while the old one's requests are still at the upstream. A configuration
// without protect leaves it unused (requests still holding its slots
// release them).
func (g *Gateway) applyProtect(cfg *config.File) (*throttle.Throttle, error) {
	if cfg.Protect == nil {
		return nil, nil
	}
	c := *cfg.Protect
	c.Clock = g.opts.Clock
	if thr := g.throttle.Load(); thr != nil {
		if err := thr.Update(c); err != nil {
			return nil, fmt.Errorf("gateway: protect: %w", err)
		}
		return thr, nil
	}
	thr, err := throttle.New(c)
	if err != nil {
		return nil, fmt.Errorf("gateway: protect: %w", err)
	}
	g.throttle.Store(thr)
	return thr, nil
}

// settled records what the upstream answered a passed request: its latency
// and status. Answers of the gateway's own (502, 504, a caller gone) are
// counted elsewhere (sluice_upstream_errors_total, sluice_caller_errors_total).
func (g *Gateway) settled(_ *decision.Request, resp *decision.Response) {
	if !resp.Passed || resp.Failure != decision.NoFailure {
		return
	}
	g.metrics.upstreamSeconds.Observe(resp.FirstByte.Seconds())
	g.metrics.upstreamResponses.WithLabelValues(statusLabel(resp.Status)).Inc()
}

// statusLabel is a status code as a label: the code itself from 100 to
// 599, "other" beyond, so that no upstream can make new series at will.
func statusLabel(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code)
}

// shedReasons are the throttle's refusals sluice_shed_total counts (a
// caller gone while it waited is not shed).
var shedReasons = []throttle.Reason{throttle.ReasonDegraded, throttle.ReasonShed, throttle.ReasonQueueFull,
	throttle.ReasonWaitTooLong, throttle.ReasonUpstreamBackoff}

var priorities = []throttle.Priority{throttle.Low, throttle.Normal, throttle.High, throttle.Critical}

// throttleCollector reads the Throttle's Stats when metrics are scraped:
// nothing is counted on the request path; with it, the bodies read
// before admission and those streamed without a slot (body.go), and
// protect.signals (signals.go). Without a throttle, sluice_shed_total
// counts the refusals under the Pressure once there are some, and the
// other series of the throttle are not reported.
type throttleCollector struct{ g *Gateway }

var (
	inFlightDesc = prometheus.NewDesc("sluice_in_flight",
		"Requests holding a slot at the upstream (protect).", nil, nil)
	inFlightLimitDesc = prometheus.NewDesc("sluice_in_flight_limit",
		"The in-flight limit in force: protect.max_in_flight, or less while the adaptive limit holds it lower.", nil, nil)
	ceilingDesc = prometheus.NewDesc("sluice_in_flight_ceiling",
		"The hard ceiling of requests in flight: protect.max_in_flight.", nil, nil)
	sheddingDesc = prometheus.NewDesc("sluice_shedding",
		"1 while protect sheds: in flight at or above shed_from x the limit, so low-priority requests are refused and degrade rules switched off.", nil, nil)
	queueLengthDesc = prometheus.NewDesc("sluice_queue_length",
		"Requests waiting for a slot in protect's queue.", nil, nil)
	bodyBufferDesc = prometheus.NewDesc("sluice_body_buffer_bytes",
		"Bytes of request bodies read whole before their request takes a slot (protect; at most server.body_buffer_total).", nil, nil)
	streamedBodiesDesc = prometheus.NewDesc("sluice_streamed_bodies",
		"Requests whose body streams to the upstream without a slot (protect; at most server.max_streamed_bodies).", nil, nil)
	shedDesc = prometheus.NewDesc("sluice_shed_total",
		"Requests protect refused, by priority and reason: degraded, shed, queue_full, wait_too_long, upstream_backoff.",
		[]string{"priority", "reason"}, nil)
)

func (c throttleCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- inFlightDesc
	ch <- inFlightLimitDesc
	ch <- ceilingDesc
	ch <- sheddingDesc
	ch <- queueLengthDesc
	ch <- shedDesc
	ch <- bodyBufferDesc
	ch <- streamedBodiesDesc
	describeSignals(ch)
}

func (c throttleCollector) Collect(ch chan<- prometheus.Metric) {
	collectSignals(ch, c.g)
	thr := c.g.throttle.Load()
	if thr == nil {
		c.collectPressured(ch, throttle.Stats{})
		return
	}
	ch <- prometheus.MustNewConstMetric(bodyBufferDesc, prometheus.GaugeValue, float64(c.g.buffers.Used()))
	ch <- prometheus.MustNewConstMetric(streamedBodiesDesc, prometheus.GaugeValue, float64(c.g.streamed.Load()))
	st := thr.Stats()
	ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(st.InFlight))
	ch <- prometheus.MustNewConstMetric(inFlightLimitDesc, prometheus.GaugeValue, float64(st.Limit))
	ch <- prometheus.MustNewConstMetric(ceilingDesc, prometheus.GaugeValue, float64(st.MaxInFlight))
	shedding := 0.0
	if st.Shedding {
		shedding = 1
	}
	ch <- prometheus.MustNewConstMetric(sheddingDesc, prometheus.GaugeValue, shedding)
	ch <- prometheus.MustNewConstMetric(queueLengthDesc, prometheus.GaugeValue, float64(st.QueueLength))
	c.collectPressured(ch, st)
}

// collectPressured reports sluice_shed_total: st's refusals (the zero
// Stats without a throttle) and those under the Pressure. Without a
// throttle, nothing until the Pressure has refused a request.
func (c throttleCollector) collectPressured(ch chan<- prometheus.Metric, st throttle.Stats) {
	m := c.g.metrics
	if c.g.throttle.Load() == nil && !m.anyPressured() {
		return
	}
	for _, p := range priorities {
		for _, r := range shedReasons {
			n := st.Refused(p, r)
			if pn := m.pressure(p, r); pn != nil {
				n += pn.Load()
			}
			ch <- prometheus.MustNewConstMetric(shedDesc, prometheus.CounterValue, float64(n), p.String(), r.String())
		}
	}
}

// shedWatch logs when shedding starts and when it ends, looking once per
// interval: so at most one line per interval, however it flaps. Shedding is
// on while the Throttle says so, or when requests were shed or degraded
// since the last look (an episode shorter than the interval).
type shedWatch struct {
	on      bool
	since   time.Time
	last    uint64 // shed and degraded refusals at the last look
	atStart uint64
}

func (w *shedWatch) look(g *Gateway, now time.Time) {
	thr := g.throttle.Load()
	if thr == nil {
		return
	}
	st := thr.Stats()
	var shed uint64
	for _, p := range priorities {
		shed += st.Refused(p, throttle.ReasonShed) + st.Refused(p, throttle.ReasonDegraded)
	}
	on := st.Shedding || shed > w.last
	switch {
	case on && !w.on:
		w.since, w.atStart = now, w.last
		g.log.Warn("shedding started: low-priority requests are refused and degrade rules switched off",
			"in_flight", st.InFlight, "limit", st.Limit, "queue_length", st.QueueLength)
	case !on && w.on:
		g.log.Info("shedding ended", "shed", shed-w.atStart, "lasted_s", now.Sub(w.since).Seconds(),
			"in_flight", st.InFlight, "limit", st.Limit)
	}
	w.on, w.last = on, shed
}

// watchShedding looks at shedding, and samples protect and the store for
// the live state (live.go), at every tick until stop is closed, then stops
// tick.
func (g *Gateway) watchShedding(tick clock.Ticker, stop <-chan struct{}) {
	defer tick.Stop()
	var w shedWatch
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C():
			w.look(g, now)
			g.sampleLive(now)
			g.followSchedule(now)
		}
	}
}
