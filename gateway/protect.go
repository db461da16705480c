package gateway

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/throttle"
)

// serviceThrottle is the Throttle of one service (config.Upstream) under
// protect: its own protect block, or the file's.
type serviceThrottle struct {
	name string
	thr  *throttle.Throttle
}

// applyProtect puts cfg's protect blocks in force, one Throttle per service
// under protect (a slow service must not shed another's requests), in the
// order of cfg's services. A service's Throttle is made the first time a
// configuration puts it under protect and Updated by every later one,
// never replaced: a new one would start from nothing in flight while the
// old one's requests are still at the upstream. A service no longer under
// protect, or gone, leaves its Throttle unused (requests still holding its
// slots release them). Nothing changes unless every block can be applied.
func (g *Gateway) applyProtect(cfg *config.File) error {
	old := g.throttlesNow()
	var next []serviceThrottle
	var updates []func()
	for i := range cfg.Upstreams {
		up := &cfg.Upstreams[i]
		pc := protectOf(cfg, up)
		if pc == nil {
			continue
		}
		c := *pc
		c.Clock = g.opts.Clock
		if j := slices.IndexFunc(old, func(s serviceThrottle) bool { return s.name == up.Name }); j >= 0 {
			thr := old[j].thr
			if err := c.Check(); err != nil {
				return fmt.Errorf("gateway: protect of %s: %w", up.Name, err)
			}
			updates = append(updates, func() { _ = thr.Update(c) })
			next = append(next, serviceThrottle{up.Name, thr})
			continue
		}
		thr, err := throttle.New(c)
		if err != nil {
			return fmt.Errorf("gateway: protect of %s: %w", up.Name, err)
		}
		next = append(next, serviceThrottle{up.Name, thr})
	}
	for _, u := range updates {
		u()
	}
	g.throttles.Store(&next)
	return nil
}

// protectOf is the protect block of the service up in cfg: its own, else
// the file's; nil when it has none.
func protectOf(cfg *config.File, up *config.Upstream) *throttle.Config {
	if up.Protect != nil {
		return up.Protect
	}
	return cfg.Protect
}

// protect is rt's protect block in cfg.
func (rt *route) protect(cfg *config.File) *throttle.Config { return protectOf(cfg, rt.up) }

// throttlesNow are the services' Throttles in force (applyProtect).
func (g *Gateway) throttlesNow() []serviceThrottle {
	if p := g.throttles.Load(); p != nil {
		return *p
	}
	return nil
}

// throttleOf is the Throttle of the service named name, nil when it is not
// under protect.
func (g *Gateway) throttleOf(name string) *throttle.Throttle {
	for _, s := range g.throttlesNow() {
		if s.name == name {
			return s.thr
		}
	}
	return nil
}

// settled records what the upstream answered a passed request: its latency
// and status. Answers of the gateway's own (502, 504, a caller gone) are
// counted elsewhere (sluice_upstream_errors_total, sluice_caller_errors_total).
func (g *Gateway) settled(req *decision.Request, resp *decision.Response) {
	rt, _ := req.Origin.(*route) // routeOf
	if !resp.Passed || resp.Failure != decision.NoFailure || rt == nil {
		return
	}
	rt.seconds.Observe(resp.FirstByte.Seconds())
	rt.responses.WithLabelValues(statusLabel(resp.Status)).Inc()
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
// before admission and those streamed without a slot (fastfront), and
// protect.signals (signals.go). Without a throttle, sluice_shed_total
// counts the refusals under the Pressure once there are some, and the
// other series of the throttle are not reported.
type throttleCollector struct{ g *Gateway }

var (
	inFlightDesc = prometheus.NewDesc("sluice_in_flight",
		"Requests holding a slot at the upstream (protect).", []string{"upstream"}, nil)
	inFlightLimitDesc = prometheus.NewDesc("sluice_in_flight_limit",
		"The in-flight limit in force: protect.max_in_flight, or less while the adaptive limit holds it lower.", []string{"upstream"}, nil)
	ceilingDesc = prometheus.NewDesc("sluice_in_flight_ceiling",
		"The hard ceiling of requests in flight: protect.max_in_flight.", []string{"upstream"}, nil)
	sheddingDesc = prometheus.NewDesc("sluice_shedding",
		"1 while protect sheds: in flight at or above shed_from x the limit, so low-priority requests are refused and degrade rules switched off.", []string{"upstream"}, nil)
	queueLengthDesc = prometheus.NewDesc("sluice_queue_length",
		"Requests waiting for a slot in protect's queue.", []string{"upstream"}, nil)
	bodyBufferDesc = prometheus.NewDesc("sluice_body_buffer_bytes",
		"Bytes of request bodies read whole before their request takes a slot (protect; at most server.body_buffer_total).", nil, nil)
	streamedBodiesDesc = prometheus.NewDesc("sluice_streamed_bodies",
		"Requests whose body streams to the upstream without a slot (protect; at most server.max_streamed_bodies).", nil, nil)
	shedDesc = prometheus.NewDesc("sluice_shed_total",
		"Requests protect refused, by upstream (empty: refused by shed_from or the degrade switch before any service's throttle), priority and reason: degraded, shed, queue_full, wait_too_long, upstream_backoff.",
		[]string{"upstream", "priority", "reason"}, nil)
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
	thrs := c.g.throttlesNow()
	if len(thrs) > 0 {
		ch <- prometheus.MustNewConstMetric(bodyBufferDesc, prometheus.GaugeValue, float64(c.g.front.BodiesBuffered()))
		ch <- prometheus.MustNewConstMetric(streamedBodiesDesc, prometheus.GaugeValue, float64(c.g.front.BodiesStreamed()))
	}
	for _, s := range thrs {
		st := s.thr.Stats()
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(st.InFlight), s.name)
		ch <- prometheus.MustNewConstMetric(inFlightLimitDesc, prometheus.GaugeValue, float64(st.Limit), s.name)
		ch <- prometheus.MustNewConstMetric(ceilingDesc, prometheus.GaugeValue, float64(st.MaxInFlight), s.name)
		shedding := 0.0
		if st.Shedding {
			shedding = 1
		}
		ch <- prometheus.MustNewConstMetric(sheddingDesc, prometheus.GaugeValue, shedding, s.name)
		ch <- prometheus.MustNewConstMetric(queueLengthDesc, prometheus.GaugeValue, float64(st.QueueLength), s.name)
		for _, p := range priorities {
			for _, r := range shedReasons {
				ch <- prometheus.MustNewConstMetric(shedDesc, prometheus.CounterValue, float64(st.Refused(p, r)), s.name, p.String(), r.String())
			}
		}
	}
	c.collectPressured(ch)
}

// collectPressured reports the refusals under the Pressure (shed_from, the
// degrade switch, signals) in sluice_shed_total, with an empty upstream:
// nothing until the Pressure has refused a request.
func (c throttleCollector) collectPressured(ch chan<- prometheus.Metric) {
	m := c.g.metrics
	if !m.anyPressured() {
		return
	}
	for _, p := range priorities {
		for _, r := range shedReasons {
			var n uint64
			if pn := m.pressure(p, r); pn != nil {
				n = pn.Load()
			}
			ch <- prometheus.MustNewConstMetric(shedDesc, prometheus.CounterValue, float64(n), "", p.String(), r.String())
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

func (w *shedWatch) look(g *Gateway, s serviceThrottle, now time.Time) {
	st := s.thr.Stats()
	var shed uint64
	for _, p := range priorities {
		shed += st.Refused(p, throttle.ReasonShed) + st.Refused(p, throttle.ReasonDegraded)
	}
	on := st.Shedding || shed > w.last
	switch {
	case on && !w.on:
		w.since, w.atStart = now, w.last
		g.log.Warn("shedding started: low-priority requests are refused and degrade rules switched off", "upstream", s.name,
			"in_flight", st.InFlight, "limit", st.Limit, "queue_length", st.QueueLength)
	case !on && w.on:
		g.log.Info("shedding ended", "upstream", s.name, "shed", shed-w.atStart, "lasted_s", now.Sub(w.since).Seconds(),
			"in_flight", st.InFlight, "limit", st.Limit)
	}
	w.on, w.last = on, shed
}

// lookAll looks at each service's Throttle, with a watch of its own.
func lookAll(g *Gateway, watches map[*throttle.Throttle]*shedWatch, now time.Time) {
	for _, s := range g.throttlesNow() {
		w := watches[s.thr]
		if w == nil {
			w = &shedWatch{}
			watches[s.thr] = w
		}
		w.look(g, s, now)
	}
}

// watchShedding looks at shedding, and samples protect and the store for
// the live state (live.go), at every tick until stop is closed, then stops
// tick.
func (g *Gateway) watchShedding(tick clock.Ticker, stop <-chan struct{}) {
	defer tick.Stop()
	watches := map[*throttle.Throttle]*shedWatch{}
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C():
			lookAll(g, watches, now)
			g.sampleLive(now)
			g.followSchedule(now)
		}
	}
}
