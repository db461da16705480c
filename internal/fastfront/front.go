// Package fastfront is the gateway's fast data path: the front that serves
// callers' HTTP/1.1 requests on fasthttp, over internal/fastproxy, as
// httplimit serves net/http's and check serves /check, handing the
// decision core plain values. For each request it keeps or makes its
// X-Request-Id, answers 508 for a request that came back from sluice's
// own upstream, finds its service (Route), has the decision core
// (package decision) decide it, reads its body first under protect
// (body.go), sends a passed one on through fastproxy (Proxy.Serve, or
// Proxy.Upgrade and a tunnel: upgrade.go) and counts and logs the
// failures it blames on the caller or the upstream.
//
// The gateway composes it: it hands the front the configuration in force
// whenever it changes (SetSnapshot: the settings, the longest wait, the
// services, the fields a caller may not remove, the forwarding header),
// the decision engine, the counters it increments, a logger and one
// callback, Options.Finished, told of each request once its answer has
// gone (the access log). So a request goes down into the front once (the
// server's handler, Serve) and climbs back into the gateway once (with an
// access log; the decision engine's own callbacks aside). The drain state
// (closing connections after their answers, the requests in flight, the
// cut once the drain timeout has passed, the open tunnels and connections)
// is the front's, behind the methods the gateway's Run calls.
package fastfront

import (
	"context"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/fastproxy"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/throttle"
)

// Options configure a Front. Engine and Clock are required.
type Options struct {
	// Engine decides each request.
	Engine *decision.Engine
	// Clock is read when a request is sent on and when its answer ends
	// (the upstream's latency).
	Clock clock.Clock
	// Counters are incremented as their docs say; a nil one is not.
	Counters Counters
	// Log receives the data path's warnings (an upstream that failed, a
	// malformed body, a loop, a body that broke off), each let through by
	// LogAllowed (nil: every one). Default: slog.Default().
	Log *slog.Logger
	// LogAllowed reports whether a line of kind (about rule, an upstream's
	// name, or "") is logged now: the gateway lets one a second through.
	LogAllowed func(kind, rule string) bool
	// Finished, if set, is told of each request once its answer has gone,
	// before v is finished (the Report it reads is v's until then): the
	// access log. v is nil for a request refused before it was decided
	// (malformed, a loop, no service). An upgraded request is told of as
	// it switches (101), and finished when its tunnel ends. resp is a
	// copy: a pointer handed to a function value would escape to the heap,
	// one allocation per request.
	Finished func(ctx *fasthttp.RequestCtx, v *decision.Verdict, resp decision.Response)
	// BodyTimeout bounds the arrival of a request's body, counted from the
	// end of the longest wait the configuration may impose (Snapshot.MaxWait).
	BodyTimeout time.Duration
	// IdleTimeout bounds a tunnel's silence (upgrade.go).
	IdleTimeout time.Duration
	// BodyBuffer and BodyBufferTotal bound the request bodies read whole
	// under protect (fastproxy.NewBuffers); MaxStreamedBodies those that
	// stream to the upstream without a slot at once (body.go).
	BodyBuffer        int
	BodyBufferTotal   int64
	MaxStreamedBodies int
}

// Counters are the data path's counters of its own refusals and failures
// (the decision core reports its decisions itself).
type Counters struct {
	Loops     Counter // requests that came back from sluice's own upstream (508)
	NotRouted Counter // requests no service's match fits (404)
	// The callers' failures, by what failed: the body broke off, came too
	// slowly, or was malformed.
	CallerAborted, CallerBodyTimeout, CallerMalformed Counter
}

// Counter is a monotonic count (prometheus.Counter is one).
type Counter interface{ Inc() }

// Snapshot is one configuration in force, as the front serves requests
// under it (Front.SetSnapshot). The gateway builds it once per
// configuration and never changes it.
type Snapshot struct {
	// Settings is what requests are decided under (with the Throttle of
	// their Route).
	Settings decision.Settings
	// MaxWait is the longest a request may wait before its body is read:
	// held for its turn by its rules' longest delay, then in protect's
	// queue for its max_wait.
	MaxWait time.Duration
	// Routes are the services, in order: the first whose Match fits gets
	// the request. None: no request goes on (502).
	Routes []*Route
	// Kept are the fields a caller may not remove by naming them in
	// Connection (fastproxy.Forwarding.Kept).
	Kept []string
	// Forwarded says the trusted proxies' Forwarded header is read, and
	// written, rather than X-Forwarded-For (policy.Forwarded).
	Forwarded bool
}

// Route is one service: where the requests its Match fits go.
type Route struct {
	Name  string         // the service's name, for logs
	URL   *url.URL       // its path and query are joined with the request's (target)
	Match policy.Matcher // the service's host and path, as a rule's match
	// All says Match fits every request (no host, no path): one such
	// route alone is taken without looking at the request.
	All      bool
	Proxy    *fastproxy.Proxy   // NewProxy
	Throttle *throttle.Throttle // protect's for this service; nil: none
	Errors   Counter            // the service's failures (unreachable, too slow)
	// Origin is handed to the decision core as decision.Request.Origin:
	// the gateway's own value of the service.
	Origin any
}

// Front serves callers' requests (Serve). Its zero value is not ready:
// New makes one.
type Front struct {
	snap     atomic.Pointer[Snapshot] // the configuration in force (SetSnapshot)
	engine   *decision.Engine
	clock    clock.Clock
	counters Counters
	log      *slog.Logger
	allowLog func(kind, rule string) bool
	finished func(ctx *fasthttp.RequestCtx, v *decision.Verdict, resp decision.Response)
	bodyTime time.Duration
	idle     time.Duration

	loopToken  string // this instance's mark on what it forwards (loop.go)
	requestIDs *requestIDs

	// Request bodies under protect (body.go): read whole before admission
	// into buffers, or streamed without a slot, at most maxStreamed.
	buffers     *fastproxy.Buffers
	streamed    atomic.Int64
	maxStreamed int64

	// The drain (drain.go).
	reqs    atomic.Pointer[context.Context] // the requests' context, cancelled by the drain timeout
	cancel  atomic.Pointer[context.CancelCauseFunc]
	closing atomic.Bool // shutting down: close each connection after its answer
	// inflight counts requests from their headers read to their answer
	// written (a streamed body to its end): what the drain waits for.
	inflight atomic.Int64
	cutting  atomic.Bool // the drain timeout passed: requests at the upstream get 503
	tunnels  tunnels     // upgraded connections (upgrade.go)
	conns    openConns   // the callers' open connections
}

// New returns a Front as o configures it.
func New(o Options) *Front {
	f := &Front{engine: o.Engine, clock: o.Clock, counters: o.Counters, log: o.Log,
		allowLog: o.LogAllowed, finished: o.Finished, bodyTime: o.BodyTimeout, idle: o.IdleTimeout,
		loopToken: newLoopToken(), requestIDs: newRequestIDs(),
		buffers: fastproxy.NewBuffers(o.BodyBuffer, o.BodyBufferTotal), maxStreamed: int64(o.MaxStreamedBodies)}
	if f.log == nil {
		f.log = slog.Default()
	}
	return f
}

// SetSnapshot puts s in force: a request is decided and sent on under the
// snapshot in force when it arrived. One must be in force before a
// request is served.
func (f *Front) SetSnapshot(s *Snapshot) { f.snap.Store(s) }

// logs reports whether a line of kind about rule is logged now.
func (f *Front) logs(kind, rule string) bool { return f.allowLog == nil || f.allowLog(kind, rule) }

func inc(c Counter) {
	if c != nil {
		c.Inc()
	}
}

// openConns keeps the callers' open connections, to close those left
// when a drain ends.
type openConns struct {
	mu   sync.Mutex
	open map[net.Conn]struct{}
}

func (a *openConns) track(c net.Conn, st fasthttp.ConnState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.open == nil {
		a.open = make(map[net.Conn]struct{})
	}
	switch st { // not Active and Idle: they change on every request
	case fasthttp.StateNew:
		a.open[c] = struct{}{}
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		delete(a.open, c)
	}
}

// answering reports whether a request's answer is still to be written on
// any open connection (fastproxy.Answering).
func (a *openConns) answering() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for c := range a.open {
		if fastproxy.Answering(c) {
			return true
		}
	}
	return false
}

func (a *openConns) closeAll() {
	a.mu.Lock()
	cs := make([]net.Conn, 0, len(a.open))
	for c := range a.open {
		cs = append(cs, c)
	}
	a.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
	}
}
