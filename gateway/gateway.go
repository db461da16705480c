// Package gateway composes sluice's parts into the product: a reverse proxy
// in front of one upstream service that applies the configured limits per
// caller, and an admin server (net/http) with Prometheus metrics,
// health, readiness and reload. It owns the configuration's life: reload on
// request, on SIGHUP (wired by the command) and on file change, where a bad
// file is refused and the policy in force stays.
//
// Run serves callers on the fast data path, the front of
// internal/fastfront over internal/fastproxy (an HTTP/1.1 server and a
// pooled, streaming upstream client on fasthttp), which the decision core
// (package decision) decides each request for. The gateway hands the
// front plain values (the configuration in force, the engine, counters, a
// logger) and is called back once a request, when its answer has gone
// (the access log); Run drives the front's drain.
package gateway

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/textproto"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/fastfront"
	"github.com/sluice-rl/sluice/internal/fastproxy"
	"github.com/sluice-rl/sluice/live"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/steering"
	"github.com/sluice-rl/sluice/store"
)

// Options configure a Gateway. Config is required.
type Options struct {
	// Config is the loaded configuration. Reload reads Config.Path again.
	Config *config.File
	// Logger receives JSON logs. Default: JSON on stderr.
	Logger *slog.Logger
	// Clock times each request (its decision, and for a request sent on
	// the upstream's answer), and keeps the time of the store the
	// gateway opens (the memory store's sweep, the Redis failover's probes
	// and cached rejections). Default clock.Real{}.
	Clock clock.Clock
	// Store keeps the counters. Default: the one Config.Store describes,
	// owned (and closed) by the gateway.
	Store store.Store
	// ShutdownTimeout bounds how long Run waits for in-flight requests
	// after its context ends. Default: Config.Server.DrainTimeout.
	ShutdownTimeout time.Duration
	// AccessLog, if set, receives the access log's lines in place of
	// Config.AccessLog.Path (with an access_log block only). Close
	// writes the last of them.
	AccessLog io.Writer
}

// Gateway is a running sluice: proxy, limiter, admin.
type Gateway struct {
	opts       Options
	snap       atomic.Pointer[snapshot]
	server     config.Server // as at start: a reload does not change it
	instanceID string        // names this instance in the heartbeat (instances.go)
	metrics    *metrics
	log        *slog.Logger
	logGate    *logGate
	store      store.Store
	ownsStore  bool
	renewer    *store.Renewer // renews the leases of concurrency rules; nil if the store keeps none
	access     *accessLog     // the access_log block's writer; nil without one
	reloadMu   sync.Mutex
	ready      atomic.Bool
	startSum   string                            // the config file's digest when New ran, for WatchConfig
	throttles  atomic.Pointer[[]serviceThrottle] // protect's, one per service, each made once (protect.go)
	park       atomic.Pointer[fastproxy.Parking] // Run's parker of idle connections (run.go); nil: none
	live       atomic.Pointer[live.Live]         // the operators' view (live.go)
	pressure   *decision.Pressure                // degrades while on: the degrade switch, the signals (signals.go)
	signals    signalSet                         // protect.signals, read while Run runs (signals.go)
	steer      *steering.Manager                 // the run-time changes (steering.go)
	steered    atomic.Pointer[inForce]           // what steer applies
	tls        tlsSet                            // the listeners' certificates, followed while Run runs (tls.go)

	engine *decision.Engine // decides requests: Run's front's, the decision services'
	front  *fastfront.Front // the fast data path Run serves callers on (run.go)
}

// New builds a gateway from opts. It opens the store but starts no server.
func New(opts Options) (*Gateway, error) {
	if opts.Config == nil || opts.Config.Compiled == nil {
		return nil, errors.New("gateway: no configuration")
	}
	opts = withDefaults(opts)
	g := &Gateway{opts: opts, metrics: newMetrics(), log: opts.Logger, store: opts.Store,
		server: serverDefaults(opts.Config.Server), instanceID: newInstanceID(),
		pressure: new(decision.Pressure)}
	if g.opts.ShutdownTimeout <= 0 {
		g.opts.ShutdownTimeout = g.server.DrainTimeout
	}
	g.logGate = newLogGate(opts.Clock, time.Second)
	g.live.Store(newLive(opts.Config))
	g.logWarnings(opts.Config)
	g.metrics.loaded(opts.Clock.Now())
	g.startSum = fileSum(opts.Config.Path)
	if err := g.openTLS(opts.Config); err != nil {
		return nil, err
	}
	var err error
	if g.access, err = newAccessLog(opts.Config.AccessLog, opts.AccessLog, g.metrics.registry); err != nil {
		return nil, err
	}
	if g.store == nil {
		st, err := openStore(context.Background(), opts.Config, opts.Clock, g.metrics, g.log)
		if err != nil {
			_ = g.access.Close()
			return nil, err
		}
		g.store, g.ownsStore = st, true
	}
	leaseTTL := cmp.Or(opts.Config.Store.LeaseTTL, store.DefaultLeaseTTL)
	var leaser store.Leaser
	if ls, ok := g.store.(store.Leaser); ok {
		g.renewer = store.NewRenewer(ls, store.RenewerOptions{Clock: opts.Clock, Every: leaseTTL / 3, OnRenew: g.metrics.observeRenewal})
		leaser = g.renewer
	}
	g.engine, err = decision.New(decision.Options{
		Store:      g.store,
		Leaser:     leaser,
		LeaseTTL:   leaseTTL,
		Clock:      opts.Clock,
		OnFailure:  opts.Config.Store.OnFailure,
		OnDecision: g.observe,
		OnResponse: g.settled,
		OnSettle:   g.settleFailed,
	})
	if err != nil {
		_ = g.Close()
		return nil, err
	}
	if err := g.applyProtect(opts.Config); err != nil {
		_ = g.Close()
		return nil, err
	}
	g.front = g.newFront()
	g.metrics.registry.MustRegister(throttleCollector{g}, liveCollector{g}, steeringCollector{g}, tlsCollector{g},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_parked_connections",
			Help: "Callers' idle keep-alive connections parked without a goroutine or buffers (10 ms without a request after the first answer, 250 ms after a later one; plain connections, on Linux)."},
			func() float64 { return float64(g.park.Load().Parked()) }))
	g.steer = g.newSteering(opts.Config)
	sctx, cancel := context.WithTimeout(context.Background(), steerStartWait)
	_ = g.steer.Sync(sctx) // what a restart had in force, before the first request; logged if it cannot be read
	cancel()
	snap := g.newSnapshot(opts.Config, nil)
	g.setSnapshot(snap)
	g.live.Load().SetPolicy(snap.front.Settings.Policy)
	g.ready.Store(true)
	return g, nil
}

// serverDefaults fills in what a File built in code rather than parsed may
// leave zero: a zero timeout or connection cap would mean none at all (or,
// for the body timeout, none of the time a body needs).
func serverDefaults(s config.Server) config.Server {
	if s == (config.Server{}) {
		return config.DefaultServer()
	}
	def := config.DefaultServer()
	for _, f := range []struct{ v, d *time.Duration }{
		{&s.ReadHeaderTimeout, &def.ReadHeaderTimeout}, {&s.BodyTimeout, &def.BodyTimeout},
		{&s.IdleTimeout, &def.IdleTimeout}, {&s.UpstreamTimeout, &def.UpstreamTimeout},
	} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	if s.MaxConnections <= 0 {
		s.MaxConnections = def.MaxConnections
	}
	if s.BodyBuffer <= 0 {
		s.BodyBuffer = def.BodyBuffer
	}
	if s.BodyBufferTotal < int64(s.BodyBuffer) {
		s.BodyBufferTotal = max(def.BodyBufferTotal, int64(s.BodyBuffer))
	}
	if s.MaxStreamedBodies <= 0 {
		s.MaxStreamedBodies = def.MaxStreamedBodies
	}
	return s
}

func withDefaults(o Options) Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return o
}

// snapshot is one configuration in force: the file, what requests are
// decided under and the proxy to its upstream. Reload swaps it whole,
// once, so that a request is decided and proxied under one file.
type snapshot struct {
	cfg *config.File
	// front is what the fast data path serves requests under: the
	// settings (with the Throttle of their route; settings.Policy with the
	// run-time overrides), the longest wait before a body is read, the
	// services and the fields a caller may not remove.
	front  fastfront.Snapshot
	routes []*route // front.Routes' own, in order (route.go)
	// base is the file's policy at the schedule's entries in force, which
	// settings.Policy is with the run-time overrides applied (steering.go);
	// nextChange is when a schedule entry next begins or ends (zero:
	// never); ignored the overrides the policy cannot apply.
	base       *policy.Compiled
	nextChange time.Time
	ignored    []string
	// The configuration's digest and each rule's, as the heartbeat
	// announces them (instances.go).
	version     string
	ruleDigests map[string]string
}

// newSnapshot returns the snapshot of cfg; old is the one in force (nil at
// start), whose upstream connections are kept when the upstream is the same.
func (g *Gateway) newSnapshot(cfg *config.File, old *snapshot) *snapshot {
	base, eff, next, ignored := g.effective(cfg)
	settings := decision.Settings{Policy: eff, LegacyHeaders: cfg.LegacyHeaders, Pressure: g.pressure}
	routes := g.newRoutes(cfg, old)
	if len(routes) > 0 {
		// The fast path decides under its route's Throttle; the rest (the
		// decision services beside the gateway, explain) under the first
		// service's, which is upstream's.
		settings.Throttle = routes[0].Throttle
	}
	snap := &snapshot{cfg: cfg, routes: routes, base: base, nextChange: next, ignored: ignored,
		version: configVersion(cfg.Policy), ruleDigests: ruleDigests(cfg.Policy),
		front: fastfront.Snapshot{Settings: settings, Kept: keptHeaders(cfg.Compiled),
			Forwarded: cfg.Compiled.ForwardedHeader() == policy.Forwarded}}
	for _, rt := range routes {
		snap.front.Routes = append(snap.front.Routes, &rt.Route)
	}
	for i := range cfg.Compiled.Rules() {
		snap.front.MaxWait = max(snap.front.MaxWait, cfg.Compiled.RuleLimit(i).Delay())
	}
	var queued time.Duration
	for _, rt := range snap.routes {
		if p := rt.protect(cfg); p != nil && p.Queue.MaxLength > 0 {
			queued = max(queued, p.Queue.MaxWait)
		}
	}
	snap.front.MaxWait += queued
	return snap
}

// InFlight is the number of requests the gateway serves now, from their
// headers read to their answer written: what a shutdown drains.
func (g *Gateway) InFlight() int64 { return g.front.InFlight() }

// newFront returns the fast data path Run serves callers on, over the
// configuration in force.
func (g *Gateway) newFront() *fastfront.Front {
	m := g.metrics
	o := fastfront.Options{
		Engine: g.engine,
		Clock:  g.opts.Clock,
		Counters: fastfront.Counters{Loops: m.loops, NotRouted: m.notRouted,
			CallerAborted:     m.callerErrors.WithLabelValues("aborted"),
			CallerBodyTimeout: m.callerErrors.WithLabelValues("body_timeout"),
			CallerMalformed:   m.callerErrors.WithLabelValues("malformed_body")},
		Log:         g.log,
		LogAllowed:  func(kind, rule string) bool { return g.logGate.allow(logSubject{kind: kind, rule: rule}) },
		BodyTimeout: g.server.BodyTimeout, IdleTimeout: g.server.IdleTimeout,
		BodyBuffer: g.server.BodyBuffer, BodyBufferTotal: g.server.BodyBufferTotal,
		MaxStreamedBodies: g.server.MaxStreamedBodies,
	}
	if g.access != nil {
		o.Finished = func(ctx *fasthttp.RequestCtx, v *decision.Verdict, resp decision.Response) {
			g.logAccess(ctx, v, &resp)
		}
	}
	return fastfront.New(o)
}

// setSnapshot puts snap in force, for the fast data path too; under
// reloadMu once New has returned.
func (g *Gateway) setSnapshot(snap *snapshot) {
	g.snap.Store(snap)
	g.front.SetSnapshot(&snap.front)
}

// config returns the configuration in force.
func (g *Gateway) config() *config.File { return g.snap.Load().cfg }

// keptHeaders are the fields a caller may not remove by naming them in
// Connection: sluice's X-Sluice-Client, the access key, and every header a
// rule counts by (counted as one value, a request must not reach the
// upstream without it). Canonical names, each once.
func keptHeaders(c *policy.Compiled) []string {
	kept := []string{policy.ClientHeader, textproto.CanonicalMIMEHeaderKey(c.KeyHeader())}
	for i := range c.Rules() {
		if k := c.Rule(i).Key; k.Kind == policy.KeyHeader {
			if name := textproto.CanonicalMIMEHeaderKey(k.Header); !slices.Contains(kept, name) {
				kept = append(kept, name)
			}
		}
	}
	return kept
}

// observe feeds one request's report to metrics, the live state and logs.
func (g *Gateway) observe(_ *decision.Request, rep *decision.Report) {
	g.metrics.observe(rep)
	g.live.Load().Observe(rep.At, rep)
	switch {
	case rep.Status == http.StatusTooManyRequests && g.logGate.allowAt(rep.At, logSubject{kind: "limited", client: rep.Client}):
		g.log.Info("client limited", "client", rep.Client, "counted", rep.Counted, "rules", limitedRules(rep),
			"retry_after_s", rep.RetryAfter.Seconds())
	case rep.Status == http.StatusUnauthorized && g.logGate.allowAt(rep.At, logSubject{kind: "unauthenticated"}):
		g.log.Info("unknown callers rejected", "client", rep.Client)
	case rep.Status == http.StatusForbidden && g.logGate.allowAt(rep.At, logSubject{kind: "blocked", client: rep.Blocked}):
		g.log.Info("caller blocked", "client", rep.Client, "blocked", rep.Blocked)
	case rep.Err != nil && !errors.Is(rep.Err, context.Canceled) && g.logGate.allowAt(rep.At, logSubject{kind: "store"}):
		g.log.Error("store failed", "err", rep.Err.Error())
	}
	if rep.UnknownKey && g.logGate.allowAt(rep.At, logSubject{kind: "unknown key"}) {
		g.log.Warn("unknown access key; counted as anonymous", "client", rep.Client, "header", g.config().Compiled.KeyHeader())
	}
	for _, r := range rep.Rules {
		if r.Outcome == decision.ShadowLimited && g.logGate.allowAt(rep.At, logSubject{kind: "shadow", client: rep.Client, rule: r.Rule}) {
			g.log.Info("client over shadow limit", "client", rep.Client, "rule", r.Rule)
		}
	}
}

// settleFailed logs, at most once a second per rule, a reservation that
// could not be settled as the response said (a bad cost_header value, the
// store's error): the reserved cost then stands.
func (g *Gateway) settleFailed(_ *decision.Request, rule string, err error) {
	if g.logGate.allow(logSubject{kind: "settle", rule: rule}) {
		g.log.Warn("reserved cost kept", "rule", rule, "err", err.Error())
	}
}

func limitedRules(rep *decision.Report) []string {
	var names []string
	for _, r := range rep.Rules {
		if r.Outcome == decision.Limited {
			names = append(names, r.Rule)
		}
	}
	return names
}

// Close releases what the gateway opened: the lease renewer, the store,
// the upstream connections and the access log (once the lines it holds
// are written). The leases of requests still in flight
// are not released: they expire within store.lease_ttl.
func (g *Gateway) Close() error {
	if snap := g.snap.Load(); snap != nil {
		closeRoutes(snap, nil)
	}
	if g.renewer != nil {
		_ = g.renewer.Close()
	}
	if err := g.access.Close(); err != nil {
		g.log.Warn("access log not written out", "err", err.Error())
	}
	if g.ownsStore {
		return g.store.Close()
	}
	return nil
}
