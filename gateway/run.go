package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/internal/fastproxy"
	"github.com/sluice-rl/sluice/internal/shutdown"
)

// parkFirst and parkAfter are how long a keep-alive connection waits
// for its next request in its own goroutine before it is parked
// (fastproxy.Parking): after its first answer and after a later one. A
// busy connection's next request arrives well within either; parkAfter is
// long beside the gap between the requests of a connection in use, and a
// connection that sent one request (a burst of new callers that then stay
// idle) holds its goroutine and its buffers (64 KiB) for no more than
// parkFirst.
var (
	parkFirst = 10 * time.Millisecond
	parkAfter = 250 * time.Millisecond
)

// errDraining cancels the requests still running when the drain timeout
// ends; they are answered 503.
var errDraining = errors.New("gateway: shutting down")

// Run serves callers on ln (the fast data path: fastfront over fasthttp) and
// the admin endpoints on admin (net/http) until ctx ends, then shuts down
// gracefully (the sequence of package internal/shutdown). /readyz answers 503 at once; for server.shutdown_delay the
// gateway keeps serving (closing each connection after its response), so
// that load balancers take it out of rotation before connections are
// refused. Then it stops accepting callers and lets the requests in flight
// finish, for at most ShutdownTimeout; requests still waiting (held for
// their turn, queued, or at the upstream) then are answered 503. Run
// returns nil after a clean drain, or an error if a server failed or
// requests outlived ShutdownTimeout. Upgraded connections (WebSocket,
// fastfront) are given ShutdownTimeout to end, then closed; they make no
// drain unclean.
func (g *Gateway) Run(ctx context.Context, ln, admin net.Listener) error {
	front := g.front
	defer front.Start()()
	srv := front.NewServer(fastproxy.Timeouts{ReadHeader: g.server.ReadHeaderTimeout, Idle: g.server.IdleTimeout},
		fastLogger{g.log})
	park := fastproxy.NewParking(srv, parkFirst, parkAfter, g.server.IdleTimeout, g.server.IdleTimeout)
	g.park.Store(park)
	adm := g.httpServer(g.AdminHandler())
	errc := make(chan error, 2)
	go func() {
		err := srv.Serve(g.callerListener(ln, park))
		if err != nil && !errors.Is(err, net.ErrClosed) {
			err = fmt.Errorf("gateway: serve %s: %w", ln.Addr(), err)
		} else {
			err = nil
		}
		errc <- err
	}()
	go func() { errc <- serve(adm, g.listenTLS(admin, adminListener)) }()
	certCtx, stopCerts := context.WithCancel(context.Background())
	certsWatched := g.tls.watch(certCtx) // the certificates' files (tls.go)
	defer func() { stopCerts(); <-certsWatched }()
	stopWatch, watched := make(chan struct{}), make(chan struct{})
	tick := g.opts.Clock.NewTicker(time.Second) // made here, so that it ticks from Run's start on
	go func() { defer close(watched); g.watchShedding(tick, stopWatch) }()
	defer func() { close(stopWatch); <-watched }()
	steerCtx, stopSteer := context.WithCancel(context.Background())
	steered := make(chan struct{})
	go func() { defer close(steered); g.runSteering(steerCtx) }()
	defer func() { stopSteer(); <-steered }()
	if hb, ok := g.heartbeat(); ok { // Redis: announce this instance to the others (instances.go)
		beat, stopBeat := context.WithCancel(context.Background())
		beating, beatTick := make(chan struct{}), g.opts.Clock.NewTicker(announceEvery)
		go func() { defer close(beating); g.announce(beat, hb, beatTick) }()
		defer func() { stopBeat(); <-beating }()
	}
	g.startSignals() // protect.signals (signals.go)
	defer g.stopSignals()
	return shutdown.Sequence{Name: "gateway", Delay: g.server.ShutdownDelay,
		Stopping: func(_, delaying bool) {
			front.SetClosing(delaying) // before /readyz says so
			g.ready.Store(false)
			if delaying {
				g.log.Info("shutting down: still serving while load balancers notice", "delay", g.server.ShutdownDelay.String())
			}
		},
		Drain: func() error {
			park.Close() // idle: closed, as the server's Shutdown closes its idle connections
			err := g.drain(srv)
			park.WaitWoken()
			// fasthttp's Shutdown closes the listeners its Serve has taken
			// up: one whose Serve had not begun yet would accept for ever.
			// Closing it here ends that Serve too (a closed listener is no
			// error).
			_ = ln.Close()
			return err
		},
		Last: func() error { // admin (readyz 503) last
			actx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return adm.Shutdown(actx)
		},
	}.Run(ctx, errc, 2)
}

// drain stops accepting callers and waits for the requests in flight, for
// at most ShutdownTimeout. Those still running then are cancelled with
// errDraining (answered 503: the upstream connections are closed under
// them) and given a second to answer before every connection is closed.
// Connections on which no request is in flight, and upgraded ones (closed
// once the drain ends), do not make the drain unclean.
func (g *Gateway) drain(srv *fasthttp.Server) error {
	sctx, cancel := context.WithTimeout(context.Background(), g.opts.ShutdownTimeout)
	defer cancel()
	err := srv.ShutdownWithContext(sctx)
	defer g.front.CloseTunnels() // upgraded connections: given the drain timeout to end, then closed
	if err == nil {
		g.front.WaitTunnels(sctx)
		return nil
	}
	if g.front.InFlight() == 0 {
		err = nil
	} else {
		g.log.Warn("requests outlived the drain timeout; answering them 503", "drain_timeout", g.opts.ShutdownTimeout.String())
		g.front.Cut(errDraining)
	}
	g.front.WaitAnswered(time.Second) // also with none in flight: an answer may still be unwritten
	g.front.CloseConns()
	return err
}

// callerListener is ln as the fast data path serves it: at most
// max_connections open (those handshaking TLS included), each write of an
// answer bounded (fastproxy.StallWrites); with TLS, the handshake first
// (tls.go), and the stalled-write and header watch on the decrypted side,
// which reads the verified client certificate once (clientcert.go).
func (g *Gateway) callerListener(ln net.Listener, park *fastproxy.Parking) net.Listener {
	capped := fastproxy.CapConnections(ln, g.server.MaxConnections)
	if g.tls.callers == nil {
		return fastproxy.StallWrites(capped, g.server.IdleTimeout, park, nil)
	}
	return fastproxy.StallWrites(g.listenTLS(capped, callersListener), g.server.IdleTimeout, park, verifiedPeerOf)
}

// fastLogger sends fasthttp's own messages (a connection that broke off
// before its request was read, and the like) to the log at debug level:
// each is answered, and counting them is the metrics' job.
type fastLogger struct{ log *slog.Logger }

func (l fastLogger) Printf(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug(fmt.Sprintf(format, args...))
	}
}

func serve(srv *http.Server, ln net.Listener) error {
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("gateway: serve %s: %w", ln.Addr(), err)
	}
	return nil
}

// httpServer is an http.Server with the server block's timeouts, for the
// admin endpoints.
func (g *Gateway) httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: g.server.ReadHeaderTimeout,
		IdleTimeout:       g.server.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
	}
}
