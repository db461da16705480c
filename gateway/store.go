package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
	"github.com/sluice-rl/sluice/store/memory"
	"github.com/sluice-rl/sluice/store/redis"
)

// openStore opens the store the configuration describes: memory, or Redis
// behind cheap rejections and the configured failure policy. Every part
// that keeps time keeps it on clk, the gateway's clock.
func openStore(ctx context.Context, cfg *config.File, clk clock.Clock, m *metrics, log *slog.Logger) (store.Store, error) {
	sc := cfg.Store
	if sc.Type == "" || sc.Type == "memory" {
		return memory.New(memoryOptions(sc, clk)), nil
	}
	ro := redis.Options{Addrs: sc.Redis.Addrs, Username: sc.Redis.Username, Password: sc.Redis.Password,
		Timeout: sc.Redis.Timeout, Prefix: sc.Redis.Prefix}
	if sc.Redis.TLS {
		ro.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	shared := &sharedRedis{open: func(ctx context.Context) (*redis.Store, error) { return redis.New(ctx, ro) },
		latency: m.storeLatency}
	_, err := shared.get(ctx)
	if err != nil {
		log.Warn("redis unreachable at start; on_failure decides until it answers", "err", err.Error())
	}
	fo := failover.Options{Shared: shared, OnFailure: sc.OnFailure, Instances: sc.Instances, Clock: clk,
		StartDegraded: err != nil, BackgroundProbe: true}
	if sc.OnFailure == store.FailLocal {
		fo.Fallback = memory.New(memoryOptions(sc, clk))
	}
	fs, err := failover.New(fo)
	if err != nil {
		_ = shared.Close()
		return nil, err
	}
	m.registerFailover(fs)
	return fs, nil
}

// memoryOptions configures a memory store, the store or the local
// fallback: bounded by max_keys and max_log_entries, with room always kept
// for the clients the policy lists (the bounds are on the other callers'
// keys), sweeping on the clock that times the decisions.
func memoryOptions(sc config.Store, clk clock.Clock) memory.Options {
	return memory.Options{MaxKeys: sc.MaxKeys, MaxLogEntries: sc.MaxLogEntries, Reserved: httplimit.ListedKey, Clock: clk}
}

// registerFailover exports the failover store's own state and counters, so
// that the metrics never disagree with what the store does.
func (m *metrics) registerFailover(fs *failover.Store) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sluice_store_degraded",
		Help: "1 while the shared store is unreachable and on_failure decides, 0 while counting is shared.",
	}, func() float64 {
		if fs.Degraded() {
			return 1
		}
		return 0
	}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sluice_store_shared_errors_total",
			Help: "Calls to the shared store (Redis) that failed or timed out (a caller that left is none).",
		}, func() float64 { return float64(fs.Stats().SharedErrors.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sluice_store_cached_rejections_total",
			Help: "Rejections answered locally from the shared store's earlier denial, without asking it.",
		}, func() float64 { return float64(fs.Stats().CachedRejections.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sluice_store_degraded_decisions_total",
			Help: "Decisions made by the failure policy (on_failure) while the shared store was unreachable.",
		}, func() float64 { return float64(fs.Stats().Degraded.Load()) }))
}

// sharedRedis is the Redis store as the failover store sees it. It stands
// in for Redis until Redis has answered once, so that an instance started
// during an outage serves by its on_failure policy instead of not
// starting: until connected, every call (at most one a second; the
// failover's circuit sends only probes) tries to connect. It times each
// batch of decisions, connecting included, into latency.
type sharedRedis struct {
	open    func(context.Context) (*redis.Store, error)
	latency prometheus.Histogram
	mu      sync.Mutex
	st      *redis.Store
	next    time.Time
	err     error
}

var _ store.AllOrNothing = (*sharedRedis)(nil)

const redialEvery = time.Second

func (s *sharedRedis) get(ctx context.Context) (*redis.Store, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st != nil || time.Now().Before(s.next) {
		return s.st, s.err
	}
	s.next = time.Now().Add(redialEvery)
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	s.st, s.err = s.open(ctx)
	if s.err != nil {
		s.st, s.err = nil, fmt.Errorf("gateway: open redis store: %w", s.err)
	}
	return s.st, s.err
}

// Decide is not timed: only Probe calls it.
func (s *sharedRedis) Decide(ctx context.Context, key string, l limiter.Limit, now time.Time, cost int64) (limiter.Decision, error) {
	st, err := s.get(ctx)
	if err != nil {
		return limiter.Decision{}, err
	}
	return st.Decide(ctx, key, l, now, cost)
}

func (s *sharedRedis) DecideBatch(ctx context.Context, reqs []store.Request, now time.Time) ([]store.Result, error) {
	start := time.Now()
	st, err := s.get(ctx)
	var res []store.Result
	if err == nil {
		res, err = st.DecideBatch(ctx, reqs, now)
	}
	s.latency.Observe(time.Since(start).Seconds())
	return res, err
}

// DecideAll passes store.AllOrNothing on to the Redis store, timed like
// DecideBatch unless Redis cannot decide the requests all or nothing.
func (s *sharedRedis) DecideAll(ctx context.Context, reqs []store.Request, now time.Time) ([]store.Result, error) {
	start := time.Now()
	st, err := s.get(ctx)
	var res []store.Result
	if err == nil {
		res, err = st.DecideAll(ctx, reqs, now)
	}
	if !errors.Is(err, store.ErrNotAtomic) {
		s.latency.Observe(time.Since(start).Seconds())
	}
	return res, err
}

func (s *sharedRedis) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = time.Now().Add(100 * 365 * 24 * time.Hour) // no more dialing
	if s.st == nil {
		return nil
	}
	return s.st.Close()
}
