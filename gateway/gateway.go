// Package gateway composes sluice's parts into the product: a reverse proxy
// in front of one upstream service that applies the configured limits per
// caller, and an admin server (net/http) with Prometheus metrics,
// health, readiness and reload. It owns the configuration's life: reload on
// request, on SIGHUP (wired by the command) and on file change, where a bad
// file is refused and the policy in force stays.
//
// Run serves callers on the fast data path: an HTTP/1.1 server and a
// pooled, streaming upstream client on fasthttp (internal/fastproxy), the
// decision core (package decision) deciding each request (fast.go).
// Handler serves the same over net/http (httplimit in front of
// httputil.ReverseProxy) for programs that mount the gateway themselves.
package gateway

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/textproto"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/internal/fastproxy"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/throttle"
)

// Options configure a Gateway. Config is required.
type Options struct {
	// Config is the loaded configuration. Reload reads Config.Path again.
	Config *config.File
	// Logger receives JSON logs. Default: JSON on stderr.
	Logger *slog.Logger
	// Clock is read once per request, and keeps the time of the store the
	// gateway opens (the memory store's sweep, the Redis failover's probes
	// and cached rejections). Default clock.Real{}.
	Clock clock.Clock
	// Store keeps the counters. Default: the one Config.Store describes,
	// owned (and closed) by the gateway.
	Store store.Store
	// ShutdownTimeout bounds how long Run waits for in-flight requests
	// after its context ends. Default: Config.Server.DrainTimeout.
	ShutdownTimeout time.Duration
	// Transport reaches the upstream from Handler (net/http). Default: a
	// clone of http.DefaultTransport with more idle connections per host
	// and Config.Server.UpstreamTimeout for connecting and for the response
	// headers. Run serves on its own fast data path (fasthttp), with a
	// pooled keep-alive client of its own.
	Transport http.RoundTripper
}

// Gateway is a running sluice: proxy, limiter, admin.
type Gateway struct {
	opts      Options
	snap      atomic.Pointer[snapshot]
	limiter   *httplimit.Limiter
	server    config.Server // as at start: a reload does not change it
	loopToken string        // this instance's mark on what it forwards
	loopMark  []string      // the header value of a request without marks: loopToken
	metrics   *metrics
	log       *slog.Logger
	logGate   *logGate
	store     store.Store
	ownsStore bool
	renewer   *store.Renewer  // renews the leases of concurrency rules; nil if the store keeps none
	transport *http.Transport // made by the gateway, so Close releases it
	reloadMu  sync.Mutex
	ready     atomic.Bool
	startSum  string                            // the config file's digest when New ran, for WatchConfig
	throttle  atomic.Pointer[throttle.Throttle] // protect's, made once (protect.go)

	// The fast data path (fast.go, run.go).
	engine  *decision.Engine                // decides Run's requests
	reqs    atomic.Pointer[context.Context] // Run's requests' context, cancelled by the drain timeout
	closing atomic.Bool                     // shutting down: close each connection after its answer
	// inflight counts Run's requests from their headers read to their
	// answer written (a streamed body to its end): what the drain waits for.
	inflight atomic.Int64
	cutting  atomic.Bool // the drain timeout passed: requests at the upstream get 503
	tunnels  tunnels     // upgraded connections (upgrade.go)
}

// New builds a gateway from opts. It opens the store but starts no server.
func New(opts Options) (*Gateway, error) {
	if opts.Config == nil || opts.Config.Compiled == nil {
		return nil, errors.New("gateway: no configuration")
	}
	opts = withDefaults(opts)
	g := &Gateway{opts: opts, metrics: newMetrics(), log: opts.Logger, store: opts.Store,
		server: serverDefaults(opts.Config.Server), loopToken: newLoopToken()}
	if g.opts.ShutdownTimeout <= 0 {
		g.opts.ShutdownTimeout = g.server.DrainTimeout
	}
	if opts.Transport == nil {
		g.transport = newTransport(g.server)
		g.opts.Transport = g.transport
	}
	g.logGate = newLogGate(opts.Clock, time.Second)
	g.logWarnings(opts.Config)
	g.startSum = fileSum(opts.Config.Path)
	if g.store == nil {
		st, err := openStore(context.Background(), opts.Config, opts.Clock, g.metrics, g.log)
		if err != nil {
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
	lim, err := httplimit.New(httplimit.Options{
		Policy:        opts.Config.Compiled,
		Store:         g.store,
		Leaser:        leaser,
		LeaseTTL:      leaseTTL,
		Clock:         opts.Clock,
		OnFailure:     opts.Config.Store.OnFailure,
		LegacyHeaders: opts.Config.LegacyHeaders,
		OnDecision:    g.observe,
		OnResponse:    g.settled,
		OnSettle:      g.settleFailed,
	})
	if err != nil {
		_ = g.Close()
		return nil, err
	}
	g.engine, err = decision.New(decision.Options{
		Store:      g.store,
		Leaser:     leaser,
		LeaseTTL:   leaseTTL,
		Clock:      opts.Clock,
		OnFailure:  opts.Config.Store.OnFailure,
		OnDecision: func(_ *decision.Request, rep *decision.Report) { g.observe(nil, rep) },
		OnResponse: g.settledFast,
		OnSettle:   func(_ *decision.Request, rule string, err error) { g.settleFailed(nil, rule, err) },
	})
	if err != nil {
		_ = g.Close()
		return nil, err
	}
	if _, err := g.applyProtect(opts.Config); err != nil {
		_ = g.Close()
		return nil, err
	}
	g.metrics.registry.MustRegister(throttleCollector{g})
	g.limiter = lim
	g.loopMark = []string{g.loopToken}
	g.snap.Store(g.newSnapshot(opts.Config, nil))
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

// copyBuffers recycles the proxy's 32 KiB copy buffers: without them every
// response allocates (and zeroes) one, and garbage collection was the
// largest cost in a CPU profile of bench/gateway.sh's allowed path (the
// pool and GC target 400 took it from 0.25x to about 0.5x nginx).
var copyBuffers = &bufferPool{}

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if buf, ok := b.p.Get().(*[]byte); ok {
		return *buf
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// snapshot is one configuration in force: the file, and the handler that
// decides under its policy and proxies to its upstream. Reload swaps it
// whole, once, so that a request is decided and proxied under one file.
type snapshot struct {
	cfg     *config.File
	handler http.Handler // the limiter in front of the proxy
	// maxWait is the longest a request may wait before its body is read
	// (caller.go): held for its turn by its rules' longest delay, then in
	// protect's queue for its max_wait.
	maxWait time.Duration
	// The fast data path's (Run): what requests are decided under, the
	// proxy to the upstream, and the fields a caller may not remove.
	settings decision.Settings
	proxy    *fastproxy.Proxy
	kept     []string
}

// newSnapshot returns the snapshot of cfg; old is the one in force (nil at
// start), whose upstream connections are kept when the upstream is the same.
func (g *Gateway) newSnapshot(cfg *config.File, old *snapshot) *snapshot {
	kept := keptHeaders(cfg.Compiled)
	proxy := &httputil.ReverseProxy{
		Rewrite:        func(pr *httputil.ProxyRequest) { g.rewrite(cfg, kept, pr) },
		Transport:      g.opts.Transport,
		ErrorHandler:   func(w http.ResponseWriter, r *http.Request, err error) { g.proxyFailed(cfg, w, r, err) },
		ModifyResponse: g.fromUpstream,
		BufferPool:     copyBuffers,
		ErrorLog:       slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
	}
	settings := httplimit.Settings{Policy: cfg.Compiled, LegacyHeaders: cfg.LegacyHeaders}
	if cfg.Protect != nil {
		settings.Throttle = g.throttle.Load() // applyProtect made it
	}
	snap := &snapshot{cfg: cfg, handler: g.limiter.HandlerWith(settings, passOn{proxy}), kept: kept,
		settings: decision.Settings{Policy: settings.Policy, LegacyHeaders: settings.LegacyHeaders, Throttle: settings.Throttle},
		proxy:    g.newProxy(cfg.Upstream, old)}
	for i := range cfg.Compiled.Rules() {
		snap.maxWait = max(snap.maxWait, cfg.Compiled.RuleLimit(i).Delay())
	}
	if p := cfg.Protect; p != nil && p.Queue.MaxLength > 0 {
		snap.maxWait += p.Queue.MaxWait
	}
	return snap
}

// config returns the configuration in force.
func (g *Gateway) config() *config.File { return g.snap.Load().cfg }

// Handler returns the callers' side: limiter in front of the proxy, each
// request under the configuration in force when it arrives.
func (g *Gateway) Handler() http.Handler { return http.HandlerFunc(g.serveCaller) }

// keptHeaders are the fields a caller may not remove by naming them in
// Connection: sluice's X-Sluice-Client, the access key, and every header a
// rule counts by (counted as one value, a request must not reach the
// upstream without it). Canonical names, each once.
func keptHeaders(c *policy.Compiled) []string {
	kept := []string{httplimit.ClientHeader, textproto.CanonicalMIMEHeaderKey(c.KeyHeader())}
	for i := range c.Rules() {
		if k := c.Rule(i).Key; k.Kind == policy.KeyHeader {
			if name := textproto.CanonicalMIMEHeaderKey(k.Header); !slices.Contains(kept, name) {
				kept = append(kept, name)
			}
		}
	}
	return kept
}

// rewrite points the request at cfg's upstream, with the kept headers
// (keptHeaders) as the limiter left them. From a trusted
// proxy, the header sluice reads the caller from (forwarded_header) goes on
// as the proxy wrote it, with the peer added; the other one may be the
// caller's own and never goes on. ReverseProxy has removed both from
// pr.Out; SetXForwarded adds X-Forwarded-For (the peer), -Host and -Proto.
func (g *Gateway) rewrite(cfg *config.File, kept []string, pr *httputil.ProxyRequest) {
	pr.SetURL(cfg.Upstream)
	g.markLoop(pr)
	peer, err := netip.ParseAddrPort(pr.In.RemoteAddr)
	trusted := err == nil && cfg.Compiled.TrustedProxy(peer.Addr())
	if cfg.Compiled.ForwardedHeader() == policy.Forwarded {
		var hops []string
		if trusted {
			hops = slices.Clone(pr.In.Header["Forwarded"])
		}
		if err == nil {
			pr.Out.Header["Forwarded"] = append(hops, forwardedFor(peer.Addr()))
		}
	} else if trusted {
		pr.Out.Header["X-Forwarded-For"] = pr.In.Header["X-Forwarded-For"]
	}
	pr.SetXForwarded()
	pr.Out.Host = pr.In.Host
	// ReverseProxy has removed the headers the caller named in Connection;
	// the caller may not make these vanish. The limiter left at most one
	// key header, one of each counted header (a shadow rule's may be
	// repeated) and sluice's own X-Sluice-Client on pr.In.
	for _, name := range kept {
		if v, ok := pr.In.Header[name]; ok {
			pr.Out.Header[name] = v
		}
	}
	dropH2C(pr.Out.Header)
}

// dropH2C keeps an upgrade to cleartext HTTP/2 (Upgrade: h2c, RFC 7540
// 3.2) from going on: an upstream that accepted it would carry every later
// request of the connection as an HTTP/2 stream the limiter never sees.
// Without it the upstream answers in HTTP/1.1, as a server that ignores
// the upgrade does; a 101 it sends anyway is refused by ReverseProxy,
// which switches only to the protocol it asked for.
func dropH2C(h http.Header) {
	for _, v := range h["Upgrade"] {
		for tok := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "h2c") {
				delete(h, "Upgrade")
				delete(h, "Connection")
				return
			}
		}
	}
}

// forwardedFor returns the RFC 7239 Forwarded element naming addr:
// for=192.0.2.1, or for="[2001:db8::1]" (an IPv6 address is quoted).
func forwardedFor(addr netip.Addr) string {
	addr = addr.Unmap().WithZone("")
	if addr.Is6() {
		return `for="[` + addr.String() + `]"`
	}
	return "for=" + addr.String()
}

// observe feeds one request's report to metrics and logs.
func (g *Gateway) observe(_ *http.Request, rep *httplimit.Report) {
	g.metrics.observe(rep)
	switch {
	case rep.Status == http.StatusTooManyRequests && g.logGate.allow(logSubject{kind: "limited", client: rep.Client}):
		g.log.Info("client limited", "client", rep.Client, "counted", rep.Counted, "rules", limitedRules(rep),
			"retry_after_s", rep.RetryAfter.Seconds())
	case rep.Status == http.StatusUnauthorized && g.logGate.allow(logSubject{kind: "unauthenticated"}):
		g.log.Info("unknown callers rejected", "client", rep.Client)
	case rep.Err != nil && !errors.Is(rep.Err, context.Canceled) && g.logGate.allow(logSubject{kind: "store"}):
		g.log.Error("store failed", "err", rep.Err.Error())
	}
	for _, r := range rep.Rules {
		if r.Outcome == httplimit.ShadowLimited && g.logGate.allow(logSubject{kind: "shadow", client: rep.Client, rule: r.Rule}) {
			g.log.Info("client over shadow limit", "client", rep.Client, "rule", r.Rule)
		}
	}
}

// settleFailed logs, at most once a second per rule, a reservation that
// could not be settled as the response said (a bad cost_header value, the
// store's error): the reserved cost then stands.
func (g *Gateway) settleFailed(_ *http.Request, rule string, err error) {
	if g.logGate.allow(logSubject{kind: "settle", rule: rule}) {
		g.log.Warn("reserved cost kept", "rule", rule, "err", err.Error())
	}
}

func limitedRules(rep *httplimit.Report) []string {
	var names []string
	for _, r := range rep.Rules {
		if r.Outcome == httplimit.Limited {
			names = append(names, r.Rule)
		}
	}
	return names
}

// Close releases what the gateway opened: the lease renewer, the store
// and the upstream connections. The leases of requests still in flight
// are not released: they expire within store.lease_ttl.
func (g *Gateway) Close() error {
	if snap := g.snap.Load(); snap != nil && snap.proxy != nil {
		snap.proxy.Close()
	}
	if g.transport != nil {
		g.transport.CloseIdleConnections()
	}
	if g.renewer != nil {
		_ = g.renewer.Close()
	}
	if g.ownsStore {
		return g.store.Close()
	}
	return nil
}
