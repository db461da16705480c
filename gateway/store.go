package gateway

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/config/storeopen"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/promlimit"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
	"github.com/sluice-rl/sluice/store/gossip"
	"github.com/sluice-rl/sluice/store/redis"
)

// openStore opens the store the configuration describes (storeopen.Open),
// keeping room for the clients the policy lists, a room of its own for the
// keys of others sharing the store (decision.ForeignKey: package rls's,
// when the gateway serves decide.grpc), and timing Redis into the
// gateway's metrics. Every part that keeps time keeps it on clk, the
// gateway's clock.
func openStore(ctx context.Context, cfg *config.File, clk clock.Clock, m *metrics, log *slog.Logger) (store.Store, error) {
	st, err := storeopen.Open(ctx, cfg.Store, storeopen.Options{Clock: clk, Guest: decision.ForeignKey, Logger: log,
		ObserveShared: m.decisions.ObserveShared})
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if fs, ok := st.(*failover.Store); ok {
		m.registerFailover(fs)
		if g, ok := fs.Shared().(interface{ GrantStats() *redis.GrantStats }); ok && cfg.Store.Redis.Lease.Max > 0 {
			m.registerLeases(g.GrantStats())
		}
	}
	if gs, ok := st.(*gossip.Store); ok {
		m.registerGossip(gs)
	}
	return st, nil
}

// registerGossip exports the gossip store's members and counters.
func (m *metrics) registerGossip(gs *gossip.Store) {
	counter := func(name, help string, v func(gossip.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(v(gs.Stats())) })
	}
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sluice_gossip_members",
		Help: "Instances this one knows in the gossip fleet, itself included.",
	}, func() float64 { return float64(len(gs.Members())) }),
		counter("sluice_gossip_unsynced_denials_total", "Requests the fleet's counts allowed but refused to wait for the next exchange (max_unsynced).",
			func(s gossip.Stats) uint64 { return s.Unsynced }),
		counter("sluice_gossip_dropped_keys_total", "Keys other instances told of that found no room (store.memory.max_keys): their counts are missing here.",
			func(s gossip.Stats) uint64 { return s.Dropped }),
		counter("sluice_gossip_send_errors_total", "Counts messages that could not be sent to a peer.",
			func(s gossip.Stats) uint64 { return s.SendErrors }),
		counter("sluice_gossip_sent_bytes_total", "Bytes of counts messages sent, over every peer.",
			func(s gossip.Stats) uint64 { return s.Bytes }))
}

// registerFailover exports the failover store's own state and counters
// (promlimit.FailoverSeries, as a Go program's), so that the metrics never
// disagree with what the store does.
func (m *metrics) registerFailover(fs *failover.Store) {
	m.registry.MustRegister(promlimit.FailoverSeries(promlimit.Options{}, fs)...)
}

// registerLeases exports the counters of leased quota (store.redis.lease:
// the Redis store's quota grants).
func (m *metrics) registerLeases(g *redis.GrantStats) {
	counter := func(name, help string, read func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(read()) })
	}
	m.registry.MustRegister(
		counter("sluice_redis_lease_grants_total", "Redis calls that leased a hot key's quota (store.redis.lease).", g.Grants.Load),
		counter("sluice_redis_lease_calls_saved_total", "Decisions answered without a Redis call of their own: from quota leased by this instance, or in the lease call of another request on the key.", g.CallsSaved.Load),
		counter("sluice_redis_lease_units_returned_total", "Unused leased units given back to Redis when their lease ended.", g.UnitsReturned.Load),
		counter("sluice_redis_lease_units_expired_total", "Unused leased units that could not go back when their lease ended (their window had ended, or the bucket was spent since): counted, never admitted.", g.UnitsExpired.Load))
}
