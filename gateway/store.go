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

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
	"github.com/sluice-rl/sluice/store/memory"
	"github.com/sluice-rl/sluice/store/redis"
)

// openStore opens the store the configuration describes: memory, or Redis
// behind cheap rejections and the configured failure policy.
func openStore(ctx context.Context, cfg *config.File, m *metrics, log *slog.Logger) (store.Store, error) {
	sc := cfg.Store
	if sc.Type == "" || sc.Type == "memory" {
		return memory.New(memory.Options{MaxKeys: sc.MaxKeys}), nil
	}
	ro := redis.Options{Addrs: sc.Redis.Addrs, Username: sc.Redis.Username, Password: sc.Redis.Password,
		Timeout: sc.Redis.Timeout, Prefix: sc.Redis.Prefix}
	if sc.Redis.TLS {
		ro.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	shared := &dialingStore{open: func(ctx context.Context) (store.Store, error) { return redis.New(ctx, ro) }}
	_, err := shared.get(ctx)
	if err != nil {
		log.Warn("redis unreachable at start; on_failure decides until it answers", "err", err.Error())
	}
	fo := failover.Options{Shared: &timedStore{Store: shared, m: m}, Instances: sc.Instances, StartDegraded: err != nil,
		BackgroundProbe: true}
	switch sc.OnFailure {
	case config.FailClosed:
		fo.Mode = failover.Closed
	case config.FailLocal:
		fo.Mode = failover.Local
		fo.Fallback = memory.New(memory.Options{MaxKeys: sc.MaxKeys})
	}
	fs, err := failover.New(fo)
	if err != nil {
		_ = shared.Close()
		return nil, err
	}
	m.registerFailover(fs)
	return fs, nil
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

// timedStore measures the shared store's latency.
type timedStore struct {
	store.Store
	m *metrics
}

func (t *timedStore) DecideBatch(ctx context.Context, reqs []store.Request, now time.Time) ([]store.Result, error) {
	start := time.Now()
	res, err := t.Store.DecideBatch(ctx, reqs, now)
	t.m.storeLatency.Observe(time.Since(start).Seconds())
	return res, err
}

// DecideAll passes store.AllOrNothing on, timed like DecideBatch.
func (t *timedStore) DecideAll(ctx context.Context, reqs []store.Request, now time.Time) ([]store.Result, error) {
	all, ok := t.Store.(store.AllOrNothing)
	if !ok {
		return nil, store.ErrNotAtomic
	}
	start := time.Now()
	res, err := all.DecideAll(ctx, reqs, now)
	if !errors.Is(err, store.ErrNotAtomic) {
		t.m.storeLatency.Observe(time.Since(start).Seconds())
	}
	return res, err
}

// dialingStore stands in for the Redis store until Redis has answered once,
// so that an instance started during an outage serves by its on_failure
// policy instead of not starting. Until connected, every call (at most one
// a second; the failover's circuit sends only probes) tries to connect.
type dialingStore struct {
	open func(context.Context) (store.Store, error)
	mu   sync.Mutex
	st   store.Store
	next time.Time
	err  error
}

const redialEvery = time.Second

func (d *dialingStore) get(ctx context.Context) (store.Store, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.st != nil || time.Now().Before(d.next) {
		return d.st, d.err
	}
	d.next = time.Now().Add(redialEvery)
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	d.st, d.err = d.open(ctx)
	if d.err != nil {
		d.st, d.err = nil, fmt.Errorf("gateway: open redis store: %w", d.err)
	}
	return d.st, d.err
}

func (d *dialingStore) Decide(ctx context.Context, key string, l limiter.Limit, now time.Time, cost int64) (limiter.Decision, error) {
	st, err := d.get(ctx)
	if err != nil {
		return limiter.Decision{}, err
	}
	return st.Decide(ctx, key, l, now, cost)
}

func (d *dialingStore) DecideBatch(ctx context.Context, reqs []store.Request, now time.Time) ([]store.Result, error) {
	st, err := d.get(ctx)
	if err != nil {
		return nil, err
	}
	return st.DecideBatch(ctx, reqs, now)
}

// DecideAll passes store.AllOrNothing on to the Redis store.
func (d *dialingStore) DecideAll(ctx context.Context, reqs []store.Request, now time.Time) ([]store.Result, error) {
	st, err := d.get(ctx)
	if err != nil {
		return nil, err
	}
	all, ok := st.(store.AllOrNothing)
	if !ok {
		return nil, store.ErrNotAtomic
	}
	return all.DecideAll(ctx, reqs, now)
}

func (d *dialingStore) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next = time.Now().Add(100 * 365 * 24 * time.Hour) // no more dialing
	if d.st == nil {
		return nil
	}
	return d.st.Close()
}
