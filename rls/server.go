package rls

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/store"
)

// Options configure a Server. Store is required; every other field has
// the default its doc states.
type Options struct {
	// Store decides the limits: memory, or Redis behind the failover
	// store whose on_failure policy answers while Redis does not.
	// *store.UnavailableError (on_failure: closed) answers OVER_LIMIT with
	// its Retry-After; another error as OnStoreError says.
	Store store.Store
	// OnStoreError is the answer for descriptors the store could not
	// decide in time (Timeout) or at all: store.FailOpen (the default)
	// answers OK, as on_failure: open lets a request pass; FailClosed and
	// FailLocal answer OVER_LIMIT with a Retry-After of 1s, as a store
	// that refuses while it cannot decide. Give it the store's on_failure.
	OnStoreError store.FailurePolicy
	// Rules are the rule files' limits. Default: none, so that every
	// domain is unknown and every descriptor is answered OK (a descriptor
	// with its own limit override included, as envoyproxy/ratelimit does).
	Rules *Rules
	// Decide, if set, decides the calls of PolicyDomain with sluice's own
	// policy, as the gateway decides its callers' requests
	// (gateway.Decider's Decide): their descriptors describe one HTTP
	// request (remote_address, method, path, header:NAME entries), so
	// that one policy file serves the gateway, /check and Envoy.
	Decide func(context.Context, decision.Request) *decision.Verdict
	// PolicyDomain is the domain Decide decides. Default
	// DefaultPolicyDomain ("sluice"). The rule files' domains are decided
	// by them, never by Decide.
	PolicyDomain string
	// Clock is the local clock: the now passed to the store (the Redis
	// store reads Redis TIME instead) and the time of requests_per_unit 0
	// windows. Default clock.Real{}.
	Clock clock.Clock
	// Timeout bounds each call's decision, on top of the deadline Envoy
	// sends: past it the store's answer is an error, answered as above,
	// so a hung store never holds Envoy. Default 1s. A store that bounds
	// its own decisions more tightly (store.Bounded: the Redis store's
	// timeout, 50ms by default) answers its error by then itself, and
	// the server then sets no timeout of its own.
	Timeout time.Duration
	// MaxDescriptors is the most descriptors one request may carry;
	// beyond, the call fails with InvalidArgument. Default 1000.
	MaxDescriptors int
	// MaxRequestBytes is the largest request message accepted (gRPC's
	// ResourceExhausted beyond). Default 1 MiB.
	MaxRequestBytes int
	// HandshakeTimeout bounds a new connection's start: the caller's
	// HTTP/2 preface and first SETTINGS frame must arrive within it, or
	// the connection is closed. It also bounds the wait for the answer to
	// the server's keepalive ping (see IdleTimeout). Default 10s, as
	// server.read_header_timeout.
	HandshakeTimeout time.Duration
	// IdleTimeout closes a connection with no call in flight for that
	// long (GOAWAY, then close), counted from its start or its last call's
	// end; a connection on which nothing has arrived for that long is
	// pinged, and closed if the ping is not answered within
	// HandshakeTimeout. Default 2m, as server.idle_timeout.
	IdleTimeout time.Duration
	// MessageTimeout bounds the wait for a call's request message once
	// its HEADERS have arrived: a call still without it is reset. Default
	// 10s, as server.read_header_timeout bounds /check's question.
	MessageTimeout time.Duration
	// MaxWaitingCalls is the most calls, over all connections, that may
	// wait for their request message at once: past it, the call that has
	// waited longest is reset, so that calls whose message never comes
	// cannot hold more than that many goroutines. Default 1024.
	MaxWaitingCalls int
	// Registerer receives the server's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger logs start and stop. Default slog.Default().
	Logger *slog.Logger
}

// Server answers Envoy's RateLimitService over gRPC, with the standard
// health service and server reflection.
type Server struct {
	opts    Options
	rules   atomic.Pointer[Rules]
	metrics *metrics
	// policyStats are the policy domain's request counters.
	policyStats *domainStats
	grpc        *grpc.Server
	health      *health.Server
	// storeBounded: the store ends each DecideEach within a bound shorter
	// than Options.Timeout (store.Bounded), so bound adds none.
	storeBounded bool
}

var _ pb.RateLimitServiceServer = (*Server)(nil)

// maxStreams is the most calls one connection may have in flight, which
// the server announces (SETTINGS_MAX_CONCURRENT_STREAMS): Envoy opens
// another connection past it. gRPC's default is none, so that one
// connection could hold any number of goroutines, each with a request
// buffered up to its flow-control window.
const maxStreams = 1024

// keepaliveMinTime is the shortest interval between the keepalive pings a
// client may send, with or without a call in flight: a client that pings
// more often is sent GOAWAY (ENHANCE_YOUR_CALM) and closed, so that pings
// cost the server nothing that matters, while Envoy's connection_keepalive
// at its usual intervals (10s and more) is answered. gRPC's default, 5m
// and no pings without a call, would close such an Envoy's connections.
const keepaliveMinTime = 10 * time.Second

// maxHeaderBytes bounds a call's header fields (Envoy's take a few hundred
// bytes), as /check's are: gRPC's default is 16 MiB, held by each call.
const maxHeaderBytes = 64 << 10

// streamWorkers is how many long-lived goroutines run the calls. A call
// that finds every worker busy runs on a new goroutine, whose stack then
// grows again through gRPC, the handler and the store's client: with
// GOMAXPROCS workers, runtime.copystack was the largest single item of a
// CPU profile of the server under bench/rls.sh's load on Redis, where a
// call holds its worker while Redis answers. So there are as many workers
// as calls Envoy keeps in flight on a busy connection (64 in
// bench/rls.sh), and no more: the workers take calls in turn, and each
// garbage collection shrinks an idle worker's stack, which its next call
// grows again. Of 0 (a goroutine per call), 2, 32, 64, 96 and 256
// workers, 64 spent the least of the server's CPU time per call under
// bench/tools/rlsload -concurrency 64, on Redis and on memory.
const streamWorkers = 64

// serviceName is the RLS service's full name, which the health service
// reports on besides "".
const serviceName = "envoy.service.ratelimit.v3.RateLimitService"

// NewServer returns a server on opts, not yet serving. Its stream
// workers start at once: end a server with Stop, GracefulStop or
// Shutdown, also one never served.
func NewServer(opts Options) (*Server, error) {
	if opts.Store == nil {
		return nil, errors.New("rls: Options.Store is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.MaxDescriptors <= 0 {
		opts.MaxDescriptors = 1000
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = 1 << 20
	}
	if opts.HandshakeTimeout <= 0 {
		opts.HandshakeTimeout = 10 * time.Second
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 2 * time.Minute
	}
	if opts.MessageTimeout <= 0 {
		opts.MessageTimeout = 10 * time.Second
	}
	if opts.MaxWaitingCalls <= 0 {
		opts.MaxWaitingCalls = 1024
	}
	if opts.PolicyDomain == "" {
		opts.PolicyDomain = DefaultPolicyDomain
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{opts: opts, metrics: newMetrics(opts.Registerer), health: health.NewServer()}
	if b, ok := opts.Store.(store.Bounded); ok {
		d, ok := b.DecideBound()
		s.storeBounded = ok && d < opts.Timeout
	}
	s.policyStats = s.metrics.domain(opts.PolicyDomain)
	s.SetRules(opts.Rules)
	s.grpc = grpc.NewServer(append(connectionOptions(opts, s.metrics),
		grpc.MaxRecvMsgSize(opts.MaxRequestBytes), grpc.MaxConcurrentStreams(maxStreams),
		grpc.MaxHeaderListSize(maxHeaderBytes), grpc.NumStreamWorkers(streamWorkers), grpc.ForceServerCodecV2(newCodec()))...)
	pb.RegisterRateLimitServiceServer(s.grpc, s)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	s.health.SetServingStatus(serviceName, healthpb.HealthCheckResponse_SERVING)
	return s, nil
}

// connectionOptions are the gRPC server's bounds on its connections and on
// the calls that wait for their message.
func connectionOptions(opts Options, m *metrics) []grpc.ServerOption {
	waiting := newWaitingCalls(opts.MessageTimeout, opts.MaxWaitingCalls,
		m.callsReset.WithLabelValues("message_timeout"), m.callsReset.WithLabelValues("evicted"))
	return []grpc.ServerOption{
		grpc.ConnectionTimeout(opts.HandshakeTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: opts.IdleTimeout,
			Time: opts.IdleTimeout, Timeout: opts.HandshakeTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveMinTime, PermitWithoutStream: true}),
		grpc.InTapHandle(waiting.tap), grpc.UnaryInterceptor(waiting.unary), grpc.StreamInterceptor(waiting.stream),
	}
}

// SetRules replaces the rules; calls under way finish on the old ones.
// nil means none. r must not be given to another Server.
func (s *Server) SetRules(r *Rules) {
	if r == nil {
		r = &Rules{}
	}
	s.metrics.bind(r)
	s.rules.Store(r)
}

// Serve accepts connections on l until Stop or GracefulStop; it returns
// nil after either.
func (s *Server) Serve(l net.Listener) error {
	s.opts.Logger.Info("rls: serving Envoy's RateLimitService", "addr", l.Addr().String())
	err := s.grpc.Serve(l)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// GracefulStop reports NOT_SERVING on the health service, stops accepting
// connections and waits for the calls under way to finish.
func (s *Server) GracefulStop() {
	s.health.Shutdown()
	s.grpc.GracefulStop()
}

// Shutdown is GracefulStop bounded by ctx: when ctx ends first, the calls
// still under way are cut off (Stop) and ctx's error returned.
func (s *Server) Shutdown(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.grpc.Stop()
		<-done
		return ctx.Err()
	}
}

// Stop closes every connection at once.
func (s *Server) Stop() {
	s.health.Shutdown()
	s.grpc.Stop()
}
