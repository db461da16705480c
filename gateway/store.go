package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
	"github.com/sluice-rl/sluice/store/memory"
	"github.com/sluice-rl/sluice/store/redisstore"
)

// openStore opens the store the configuration describes: memory, or Redis
// behind cheap rejections and the configured failure policy. Every part
// that keeps time keeps it on clk, the gateway's clock.
func openStore(ctx context.Context, cfg *config.File, clk clock.Clock, m *metrics, log *slog.Logger) (store.Store, error) {
	sc := cfg.Store
	if sc.Type == "" || sc.Type == "memory" {
		return memory.New(memoryOptions(sc, clk)), nil
	}
	// Lazy: an instance started during a Redis outage serves by its
	// on_failure policy instead of not starting, and connects once Redis
	// answers (the failover's circuit sends it only probes meanwhile).
	ro := redisstore.Options{Addrs: sc.Redis.Addrs, Username: sc.Redis.Username, Password: sc.Redis.Password,
		Timeout: sc.Redis.Timeout, Prefix: sc.Redis.Prefix, Lazy: true, Clock: clk}
	if sc.Redis.TLS {
		ro.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	rs, err := redisstore.New(ctx, ro)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	shared := timedRedis{Store: rs, latency: m.storeLatency}
	err = rs.Connect(ctx)
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

// timedRedis is the Redis store as the failover store sees it: each batch
// of decisions is timed into latency (a lazy store's tries to connect
// included).
type timedRedis struct {
	*redisstore.Store
	latency prometheus.Histogram
}

var _ store.AllOrNothing = timedRedis{}

// DecideBatch is the Redis store's, timed.
func (t timedRedis) DecideBatch(ctx context.Context, reqs []store.Request, now time.Time) ([]store.Result, error) {
	start := time.Now()
	res, err := t.Store.DecideBatch(ctx, reqs, now)
	t.latency.Observe(time.Since(start).Seconds())
	return res, err
}

// DecideAll is the Redis store's, timed unless Redis cannot decide the
// requests all or nothing.
func (t timedRedis) DecideAll(ctx context.Context, reqs []store.Request, now time.Time) ([]store.Result, error) {
	start := time.Now()
	res, err := t.Store.DecideAll(ctx, reqs, now)
	if !errors.Is(err, store.ErrNotAtomic) {
		t.latency.Observe(time.Since(start).Seconds())
	}
	return res, err
}
