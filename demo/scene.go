package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/gateway"
)

// scene is everything the demo runs: the claims service, sluice in front of
// it, and the two partner programs with their HTTP client.
type scene struct {
	duration                       time.Duration
	claimsURL, sluiceURL, adminURL string
	yaml                           string
	service                        *claimsService
	claimsSrv                      *http.Server
	claimsLn, sluiceLn, adminLn    net.Listener
	gw                             *gateway.Gateway
	client                         *http.Transport
	a, b                           *partner

	gwStopped, claimsStopped chan struct{}
	gwErr, claimsErr         error // valid once the channel above is closed
}

// setUp opens the listeners, builds sluice's configuration and the gateway.
// Nothing is served yet. On error, whatever was opened is closed again.
func setUp(opts Options, out *printer) (*scene, error) {
	s := &scene{duration: opts.Duration, service: newClaimsService()}
	if err := s.open("sluice-demo.yaml", configYAML, newTransport); err != nil {
		return nil, err
	}
	s.claimsSrv = &http.Server{Handler: s.service.handler(), ReadHeaderTimeout: requestTimeout}
	s.a, s.b = s.partners(opts, out)
	return s, nil
}

// open opens the listeners on 127.0.0.1, writes sluice's configuration with
// yaml (named file in errors) and builds the gateway, with the callers'
// transport from newTr. On error, whatever was opened is closed again.
func (s *scene) open(file string, yaml func(listen, upstream, admin string) string,
	newTr func() *http.Transport) (err error) {
	defer func() {
		if err != nil {
			s.closeListeners()
		}
	}()
	for _, ln := range []*net.Listener{&s.claimsLn, &s.sluiceLn, &s.adminLn} {
		if *ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return fmt.Errorf("demo: listen on 127.0.0.1: %w", err)
		}
	}
	s.claimsURL = "http://" + s.claimsLn.Addr().String()
	s.sluiceURL = "http://" + s.sluiceLn.Addr().String()
	s.adminURL = "http://" + s.adminLn.Addr().String()
	s.yaml = yaml(s.sluiceLn.Addr().String(), s.claimsURL, s.adminLn.Addr().String())
	cfg, err := config.Parse(file, []byte(s.yaml))
	if err != nil {
		return fmt.Errorf("demo: sluice's configuration: %w", err)
	}
	s.client = newTr()
	s.gw, err = gateway.New(gateway.Options{
		Config:          cfg,
		Logger:          slog.New(slog.DiscardHandler), // the table tells the story
		ShutdownTimeout: requestTimeout,
	})
	if err != nil {
		return fmt.Errorf("demo: start sluice: %w", err)
	}
	return nil
}

// partners builds the two partner programs; they report their remarkable
// answers (the foreign claim, the first 429) to out.
func (s *scene) partners(opts Options, out *printer) (a, b *partner) {
	client := &http.Client{Transport: s.client, Timeout: requestTimeout}
	onAnswer := func(p *partner, ans *Answer) {
		if ans.StatusCode == http.StatusTooManyRequests {
			out.rejection(p.id, ans)
			return
		}
		out.foreignClaim(p.id, partnerA, ans)
	}
	a = &partner{id: partnerA, key: keyA, every: opts.PartnerAEvery, client: client, base: s.sluiceURL,
		own: []string{"CLM-1001", "CLM-1002", "CLM-1003"}, onAnswer: onAnswer}
	b = &partner{id: partnerB, key: keyB, every: opts.PartnerBEvery, client: client, base: s.sluiceURL,
		own: []string{"CLM-2001", "CLM-2002", "CLM-2003"}, onAnswer: onAnswer,
		probeAt: probeRequest, foreign: "CLM-1002"}
	return a, b
}

// newTransport is a transport for a few steady connections to 127.0.0.1,
// never through a proxy, every wait bounded.
func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: requestTimeout}).DialContext,
		MaxIdleConns:          16,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: requestTimeout,
	}
}

// configYAML is sluice's configuration for the demo, as a person would
// write it.
func configYAML(listen, upstream, admin string) string {
	return fmt.Sprintf(`listen: %-26s# where the partners' programs connect
upstream: %-24s# the claims service
admin: %-27s# metrics, health, reload

clients:
  key_header: %s
  unknown: reject                 # unknown keys get 401 and are not counted
  list:
    - id: %s
      keys: [%s]
    - id: %s
      keys: [%s]

rules:
  - name: claims
    match: { path: /claims, methods: [GET] }
    key: client                   # one counter per partner
    algorithm: sliding_log        # exact: at most 100 in any 60 seconds
    rate: 100/m
`, listen, upstream, admin, keyHeader, partnerA, keyA, partnerB, keyB)
}

// start serves the claims service and sluice until tearDown.
func (s *scene) start(gwCtx context.Context) {
	s.gwStopped, s.claimsStopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.claimsStopped)
		if err := s.claimsSrv.Serve(s.claimsLn); !errors.Is(err, http.ErrServerClosed) {
			s.claimsErr = fmt.Errorf("demo: claims service: %w", err)
		}
	}()
	go func() {
		defer close(s.gwStopped)
		if err := s.gw.Run(gwCtx, s.sluiceLn, s.adminLn); err != nil {
			s.gwErr = fmt.Errorf("demo: sluice: %w", err)
		}
	}()
}

// tearDown stops sluice (stopGateway ends its Run), then the claims service,
// and closes every connection, in the order that lets each part drain.
func (s *scene) tearDown(stopGateway context.CancelFunc) error {
	s.client.CloseIdleConnections()
	stopGateway()
	<-s.gwStopped
	closeErr := s.gw.Close()
	if closeErr != nil {
		closeErr = fmt.Errorf("demo: close sluice: %w", closeErr)
	}
	// sluice's connections to the claims service have gone with Close: one
	// dialled for a request that was then cancelled has carried nothing,
	// and the server's Shutdown would wait 5 s for such a "new" connection.
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	shutErr := s.claimsSrv.Shutdown(ctx)
	if shutErr != nil {
		shutErr = fmt.Errorf("demo: shut down claims service: %w", shutErr)
	}
	<-s.claimsStopped
	return errors.Join(s.gwErr, closeErr, shutErr, s.claimsErr)
}

// closeListeners closes the listeners open opened when it fails.
func (s *scene) closeListeners() {
	for _, ln := range []net.Listener{s.claimsLn, s.sluiceLn, s.adminLn} {
		if ln != nil {
			_ = ln.Close() // nothing was served on it
		}
	}
}
