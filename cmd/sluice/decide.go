package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"

	"github.com/sluice-rl/sluice/check"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/gateway"
	"github.com/sluice-rl/sluice/internal/shutdown"
	"github.com/sluice-rl/sluice/rls"
)

// service is one server of the decision service (/check; Envoy's gRPC),
// listening on its address, run beside the gateway or alone.
type service struct {
	name  string
	ln    net.Listener
	serve func(net.Listener) error    // until stop; returns nil after a stop
	stop  func(context.Context) error // graceful: questions in flight are answered
	// reload, if set, rereads what the service reads besides the
	// configuration file (Envoy's rule files) on SIGHUP.
	reload func() error
}

// listenDecide listens on the decide block's addresses and returns its
// services, deciding with g. With an error, nothing is left listening.
func listenDecide(cfg *config.File, g *gateway.Gateway, log *slog.Logger) ([]service, error) {
	d := cfg.Decide
	if d == nil {
		return nil, nil
	}
	dec, err := g.Decider() // /check's and Envoy's domain "sluice": the gateway's own policy
	if err != nil {
		return nil, err
	}
	var svcs []service
	if d.HTTP != "" {
		h, err := check.New(check.Options{Decide: dec.Decide, DenyStatus: d.HTTPDenyStatus})
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", d.HTTP)
		if err != nil {
			closeAll(svcs)
			return nil, fmt.Errorf("decide.http listen: %w", err)
		}
		ln = gateway.CapConnections(ln, cfg.Server.MaxConnections)
		srv := decisionServer(h, cfg.Server, log)
		svcs = append(svcs, service{name: "check", ln: ln, serve: httpServe(srv), stop: srv.Shutdown})
	}
	if d.GRPC != "" {
		svc, err := listenGRPC(cfg, g, dec, log)
		if err != nil {
			closeAll(svcs)
			return nil, err
		}
		svcs = append(svcs, svc)
	}
	return svcs, nil
}

// listenGRPC listens for Envoy's rate limit service on decide.grpc,
// deciding envoyproxy/ratelimit's rule files (decide.envoy_config) on the
// gateway's store, with its series on the admin port's /metrics, and the
// domain "sluice" with dec. The server block bounds its connections as
// /check's: read_header_timeout a connection's start and a call's wait for
// its message, idle_timeout a connection without calls, max_connections
// their number.
func listenGRPC(cfg *config.File, g *gateway.Gateway, dec *gateway.Decider, log *slog.Logger) (service, error) {
	d := cfg.Decide
	rules, err := loadEnvoyRules(d.EnvoyConfig, cfg.Store)
	if err != nil {
		return service{}, err
	}
	header := cmp.Or(cfg.Server.ReadHeaderTimeout, config.DefaultReadHeaderTimeout)
	srv, err := rls.NewServer(rls.Options{Store: g.Store(), OnStoreError: cfg.Store.OnFailure, Rules: rules, Decide: dec.Decide,
		HandshakeTimeout: header, MessageTimeout: header, IdleTimeout: cmp.Or(cfg.Server.IdleTimeout, config.DefaultIdleTimeout),
		Registerer: g.Registerer(), Logger: log})
	if err != nil {
		return service{}, err
	}
	ln, err := net.Listen("tcp", d.GRPC)
	if err != nil {
		srv.Stop() // its stream workers
		return service{}, fmt.Errorf("decide.grpc listen: %w", err)
	}
	ln = gateway.CapConnections(ln, cfg.Server.MaxConnections)
	reload := func() error {
		rules, err := loadEnvoyRules(d.EnvoyConfig, cfg.Store)
		if err != nil {
			log.Error("envoy rule files refused; the old rules stay", "err", err.Error())
			return err
		}
		srv.SetRules(rules)
		log.Info("envoy rule files reloaded", "domains", len(rules.Domains()))
		return nil
	}
	return service{name: "grpc", ln: ln, serve: srv.Serve, stop: srv.Shutdown, reload: reload}, nil
}

// loadEnvoyRules reads and compiles envoyproxy/ratelimit's rule files
// (none: no rules, every domain unknown), refusing the limits st does not
// keep.
func loadEnvoyRules(paths []string, st config.Store) (*rls.Rules, error) {
	doms, err := config.LoadEnvoyFor(paths, st)
	if err != nil {
		return nil, err
	}
	return rls.Compile(doms), nil
}

// decisionServer is the http.Server of /check: its questions are small
// and come from a proxy's keep-alive connections.
func decisionServer(h http.Handler, s config.Server, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cmp.Or(s.ReadHeaderTimeout, config.DefaultReadHeaderTimeout),
		ReadTimeout:       cmp.Or(s.BodyTimeout, config.DefaultBodyTimeout),
		IdleTimeout:       cmp.Or(s.IdleTimeout, config.DefaultIdleTimeout),
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

func httpServe(srv *http.Server) func(net.Listener) error {
	return func(ln net.Listener) error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// runServices runs the gateway on ln and admin (ln nil: the admin
// endpoints alone) and the decision services until ctx ends or one of
// them fails, then stops them gracefully (the sequence of package
// internal/shutdown, as the gateway's Run): /readyz answers 503 at once,
// the services keep answering for server.shutdown_delay, then stop
// taking questions and answer those in flight within drain_timeout, all
// at once; the admin endpoints stop last.
func runServices(ctx context.Context, cfg *config.File, g *gateway.Gateway, ln, admin net.Listener, svcs []service) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	all := slices.Clip(svcs)
	var adm *http.Server // the admin endpoints, when no gateway serves them
	if ln == nil {
		adm = decisionServer(g.AdminHandler(), cfg.Server, slog.Default())
		all = append(all, service{name: "admin", ln: admin, serve: httpServe(adm), stop: adm.Shutdown})
	}
	errc := make(chan error, len(all)+1)
	if ln != nil {
		go func() { errc <- g.Run(ctx, ln, admin) }()
	}
	for _, s := range all {
		go func() { errc <- s.run() }()
	}
	return shutdown.Sequence{Name: "decision service", Delay: cfg.Server.ShutdownDelay, // the gateway, if any, waits the same delay in Run
		Stopping: func(byServer, _ bool) {
			if byServer {
				cancel() // one stopped: stop the others
			} else {
				slog.Default().Info("draining", "in_flight", g.InFlight(), "shutdown_delay", cfg.Server.ShutdownDelay.String(),
					"drain_timeout", cfg.Server.DrainTimeout.String())
			}
			g.Stopping()
		},
		Drain: func() error {
			sctx, stop := context.WithTimeout(context.Background(), cfg.Server.DrainTimeout) // 0 allowed: no wait, as at the gateway
			defer stop()
			err := stopAll(sctx, svcs)
			if adm != nil { // last: /readyz answers 503 while the others drain
				err = errors.Join(err, adm.Shutdown(sctx))
			}
			return err
		},
	}.Run(ctx, errc, len(all)+b2i(ln != nil))
}

// run serves s until it is stopped (nil) or fails.
func (s service) run() error {
	if err := s.serve(s.ln); err != nil {
		return fmt.Errorf("%s: serve %s: %w", s.name, s.ln.Addr(), err)
	}
	return nil
}

// stopAll stops the services at once, each answering its questions in
// flight until ctx ends.
func stopAll(ctx context.Context, svcs []service) error {
	errs := make([]error, len(svcs))
	var wg sync.WaitGroup
	for i, s := range svcs {
		wg.Go(func() { errs[i] = s.stop(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// closeAll closes the services' listeners and stops them, never served
// (after a failure to start): nothing is in flight, and the gRPC server's
// stream workers end.
func closeAll(svcs []service) {
	for _, s := range svcs {
		_ = s.ln.Close()
		_ = s.stop(context.Background())
	}
}
