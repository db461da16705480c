package gateway

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
	"github.com/sluice-rl/sluice/store/memory"
	"github.com/sluice-rl/sluice/store/redis"
)

// openStore opens the store the configuration describes: memory, or Redis
// behind cheap rejections and the configured failure policy.
func openStore(ctx context.Context, cfg *config.File, m *metrics) (store.Store, error) {
	sc := cfg.Store
	if sc.Type == "" || sc.Type == "memory" {
		return memory.New(memory.Options{MaxKeys: sc.MaxKeys}), nil
	}
	ro := redis.Options{Addrs: sc.Redis.Addrs, Username: sc.Redis.Username, Password: sc.Redis.Password,
		Timeout: sc.Redis.Timeout, Prefix: sc.Redis.Prefix}
	if sc.Redis.TLS {
		ro.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	shared, err := redis.New(ctx, ro)
	if err != nil {
		return nil, fmt.Errorf("gateway: open redis store: %w", err)
	}
	fo := failover.Options{Shared: &timedStore{Store: shared, m: m}, Instances: sc.Instances,
		OnStateChange: func(degraded bool) { m.degraded.Set(b2f(degraded)) }}
	switch sc.OnFailure {
	case config.FailClosed:
		fo.Mode = failover.Closed
	case config.FailLocal:
		fo.Mode = failover.Local
		fo.Fallback = memory.New(memory.Options{MaxKeys: sc.MaxKeys})
	}
	fs, err := failover.New(fo)
	if err != nil {
		shared.Close()
		return nil, err
	}
	m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "sluice_store_cached_rejections_total",
		Help: "Rejections answered locally from the shared store's earlier denial, without asking it.",
	}, func() float64 { return float64(fs.Stats().CachedRejections.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sluice_store_degraded_decisions_total",
			Help: "Decisions made by the failure policy (on_failure) while the shared store was unreachable.",
		}, func() float64 { return float64(fs.Stats().Degraded.Load()) }))
	return fs, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// timedStore measures the shared store's latency and errors.
type timedStore struct {
	store.Store
	m *metrics
}

func (t *timedStore) DecideBatch(ctx context.Context, reqs []store.Request, now time.Time) ([]store.Result, error) {
	start := time.Now()
	res, err := t.Store.DecideBatch(ctx, reqs, now)
	t.m.storeLatency.Observe(time.Since(start).Seconds())
	if err != nil {
		t.m.sharedErrors.Inc()
	}
	return res, err
}
