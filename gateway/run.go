package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// errDraining cancels the requests still running when the drain timeout
// ends; proxyFailed answers them 503.
var errDraining = errors.New("gateway: shutting down")

// Run serves callers on ln and the admin endpoints on admin until ctx ends,
// then shuts down gracefully. /readyz answers 503 at once; for
// server.shutdown_delay the gateway keeps serving (closing each connection
// after its response), so that load balancers take it out of rotation
// before connections are refused. Then it stops accepting callers and lets
// the requests in flight finish, for at most ShutdownTimeout; requests
// still waiting for the upstream then are answered 503. Run returns nil
// after a clean drain, or an error if a server failed or requests outlived
// ShutdownTimeout.
func (g *Gateway) Run(ctx context.Context, ln, admin net.Listener) error {
	reqs, cut := context.WithCancelCause(context.Background())
	defer cut(nil)
	srv := g.httpServer(g.Handler())
	srv.BaseContext = func(net.Listener) context.Context { return reqs }
	var active activeConns
	srv.ConnState = active.track
	adm := g.httpServer(g.AdminHandler())
	errc := make(chan error, 2)
	go func() {
		errc <- serve(srv, capConnections(stallWrites(ln, g.server.IdleTimeout), g.server.MaxConnections))
	}()
	go func() { errc <- serve(adm, admin) }()
	stopWatch, watched := make(chan struct{}), make(chan struct{})
	tick := g.opts.Clock.NewTicker(time.Second) // made here, so that it ticks from Run's start on
	go func() { defer close(watched); g.watchShedding(tick, stopWatch) }()
	defer func() { close(stopWatch); <-watched }()
	var err error
	running := 2
	select {
	case <-ctx.Done():
	case err = <-errc:
		running--
	}
	g.ready.Store(false)
	if err == nil && g.server.ShutdownDelay > 0 {
		g.log.Info("shutting down: still serving while load balancers notice", "delay", g.server.ShutdownDelay.String())
		srv.SetKeepAlivesEnabled(false)
		select {
		case <-time.After(g.server.ShutdownDelay):
		case err = <-errc:
			running--
		}
	}
	shutErr := g.drain(srv, &active, cut)
	actx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	shutErr = errors.Join(shutErr, adm.Shutdown(actx)) // admin (readyz 503) last
	for ; running > 0; running-- {
		err = cmp.Or(err, <-errc) // the first error, if any
	}
	if err == nil && shutErr != nil {
		err = fmt.Errorf("gateway: shutdown: %w", shutErr)
	}
	return err
}

// drain stops accepting callers and waits for the requests in flight, for
// at most ShutdownTimeout. Those still running then are cancelled with
// errDraining (proxyFailed answers 503) and given a second to answer
// before their connections are closed. Connections on which no request is
// in flight do not make the drain unclean: net/http waits up to 5s for one
// that has not sent its first request yet (a preconnect, a port scan).
func (g *Gateway) drain(srv *http.Server, active *activeConns, cut context.CancelCauseFunc) error {
	sctx, cancel := context.WithTimeout(context.Background(), g.opts.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err == nil {
		return nil
	}
	if active.count() == 0 {
		_ = srv.Close()
		return nil
	}
	g.log.Warn("requests outlived the drain timeout; answering them 503", "drain_timeout", g.opts.ShutdownTimeout.String())
	cut(errDraining)
	last, cancelLast := context.WithTimeout(context.Background(), time.Second)
	defer cancelLast()
	if srv.Shutdown(last) != nil {
		_ = srv.Close()
	}
	return err
}

// activeConns counts the connections with a request in flight (net/http's
// StateActive: from the request's headers read to its answer written).
type activeConns struct {
	mu     sync.Mutex
	active map[net.Conn]struct{}
}

func (a *activeConns) track(c net.Conn, st http.ConnState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st == http.StateActive {
		if a.active == nil {
			a.active = make(map[net.Conn]struct{})
		}
		a.active[c] = struct{}{}
	} else {
		delete(a.active, c)
	}
}

func (a *activeConns) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.active)
}

func serve(srv *http.Server, ln net.Listener) error {
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("gateway: serve %s: %w", ln.Addr(), err)
	}
	return nil
}

// httpServer is an http.Server with the server block's timeouts. The body
// timeout is set per request (serveCaller), counted from the end of the
// headers; ReadTimeout would count the headers in too.
func (g *Gateway) httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: g.server.ReadHeaderTimeout,
		IdleTimeout:       g.server.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
	}
}
