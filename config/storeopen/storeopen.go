// Package storeopen opens the store that a sluice configuration's store
// settings (config.Store, the file's store block) describe: the memory
// store, Redis behind the failover store that answers cheap rejections
// locally and applies on_failure while Redis cannot be reached, or the
// gossip store (store/gossip). It is how
// the gateway opens its store, exported so that a Go program reading the
// same settings gets the same store:
//
//	st, err := storeopen.Open(ctx, cfg.Store, storeopen.Options{})
//
// Package config knows nothing of Redis or memberlist; this package,
// which stands above it (it reads config.Store), joins them: no package
// of store/ imports config.
package storeopen

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
	"github.com/sluice-rl/sluice/store/gossip"
	"github.com/sluice-rl/sluice/store/memory"
	"github.com/sluice-rl/sluice/store/redis"
)

// Options are what the settings leave to the program. The zero value is
// ready to use.
type Options struct {
	// Clock times every part of the stores that keeps time: the memory
	// store's sweep, the failover store's probes and cached rejections,
	// and a lazy Redis store's tries to connect. Decisions are timed by
	// the now passed to them (Redis decisions by Redis TIME), which should
	// come from the same clock. Default clock.Real{}.
	Clock clock.Clock
	// Guest is memory.Options.Guest for the memory store and the local
	// fallback: the keys that callers make as they like, kept in a room
	// of their own of max_rls_keys keys. With the gateway's policy and
	// package rls on one store, decision.ForeignKey names rls's keys.
	// Default nil: no key is a guest.
	Guest func(key store.Key) bool
	// Logger receives a warning when Redis cannot be reached at start.
	// Default: warnings are discarded.
	Logger *slog.Logger
	// ObserveShared, if set, is called with the time each batch of
	// decisions asked of Redis took (a lazy store's tries to connect
	// included), as the gateway's sluice_store_seconds records it. It is
	// called concurrently, on the deciding goroutine, so it must be quick.
	ObserveShared func(time.Duration)
}

// Open opens the store sc describes. Type "" or "memory" gives a
// *memory.Store bounded by MaxKeys and MaxLogEntries (its guests by
// MaxRLSKeys). Type "redis" gives a
// *failover.Store (whose Degraded and Stats a program can export) over a
// Redis store that connects lazily: Open does not fail while Redis is
// down, the store then decides by sc.OnFailure until Redis answers, and
// its background probe finds out when it does. With on_failure: local,
// the fallback is a memory store as above, each instance allowing
// limit/sc.Instances. Type "gossip" gives a *gossip.Store on sc.Gossip,
// which starts alone if no instance of Join answers yet and joins them
// once one does. The caller closes the store.
func Open(ctx context.Context, sc config.Store, opts Options) (store.Store, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch sc.Type {
	case "", "memory":
		return memory.New(memoryOptions(sc, opts)), nil
	case "redis":
		return openRedis(ctx, sc, opts)
	case "gossip":
		gs, err := gossip.New(GossipOptions(sc, opts))
		if err != nil {
			return nil, fmt.Errorf("storeopen: %w", err)
		}
		return gs, nil
	}
	return nil, fmt.Errorf("storeopen: store type %q (memory, redis or gossip)", sc.Type)
}

// openRedis opens the lazy Redis store behind its failover store.
func openRedis(ctx context.Context, sc config.Store, opts Options) (store.Store, error) {
	// Lazy: an instance started during a Redis outage serves by its
	// on_failure policy instead of not starting, and connects once Redis
	// answers (the failover's circuit sends it only probes meanwhile).
	ro := RedisOptions(sc)
	ro.Lazy, ro.Clock = true, opts.Clock
	rs, err := redis.New(ctx, ro)
	if err != nil {
		return nil, fmt.Errorf("storeopen: %w", err)
	}
	var shared store.Store = rs
	if opts.ObserveShared != nil {
		shared = timedRedis{Store: rs, observe: opts.ObserveShared}
	}
	err = rs.Connect(ctx)
	if err != nil {
		opts.Logger.Warn("redis unreachable at start; on_failure decides until it answers", "err", err.Error())
	}
	fo := failover.Options{Shared: shared, OnFailure: sc.OnFailure, Instances: sc.Instances, Clock: opts.Clock,
		StartDegraded: err != nil, BackgroundProbe: true}
	if sc.OnFailure == store.FailLocal {
		fo.Fallback = memory.New(memoryOptions(sc, opts))
	}
	fs, err := failover.New(fo)
	if err != nil {
		_ = shared.Close()
		if fo.Fallback != nil {
			_ = fo.Fallback.Close()
		}
		return nil, fmt.Errorf("storeopen: %w", err)
	}
	return fs, nil
}

// RedisOptions are the options of a Redis store on sc.Redis: addresses,
// credentials, timeout, prefix, TLS and leased quota (quota grants).
func RedisOptions(sc config.Store) redis.Options {
	ro := redis.Options{Addrs: sc.Redis.Addrs, Username: sc.Redis.Username, Password: sc.Redis.Password,
		Timeout: sc.Redis.Timeout, Prefix: sc.Redis.Prefix,
		Grant: redis.GrantOptions{Max: sc.Redis.Lease.Max, TTL: sc.Redis.Lease.TTL}}
	if sc.Redis.TLS {
		ro.TLS = TLSConfig(sc.Redis.TLSOptions)
	}
	return ro
}

// GossipOptions are the options of a gossip store on sc.Gossip, bounded
// by max_keys, sweeping and logging as opts say.
func GossipOptions(sc config.Store, opts Options) gossip.Options {
	g := sc.Gossip
	return gossip.Options{Bind: g.Bind, Join: g.Join, Interval: g.Interval, MaxUnsynced: g.MaxUnsynced, Key: g.Key,
		MaxKeys: sc.MaxKeys, Clock: opts.Clock, Logger: opts.Logger}
}

// TLSConfig is the TLS configuration of connections to Redis with
// store.redis.tls: TLS 1.2 or later, the server's certificate verified
// against t's authorities (the system's without them) under t's server
// name (the host dialled without it), t's client certificate offered.
func TLSConfig(t config.RedisTLS) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: t.RootCAs, ServerName: t.ServerName}
	if t.Certificate != nil {
		c.Certificates = []tls.Certificate{*t.Certificate}
	}
	return c
}

// memoryOptions configures a memory store, the store or the local
// fallback: bounded by max_keys and max_log_entries, with room always kept
// for the Listed keys and a room of max_rls_keys for the guests, sweeping
// on the clock that times the decisions.
func memoryOptions(sc config.Store, opts Options) memory.Options {
	return memory.Options{MaxKeys: sc.MaxKeys, MaxLogEntries: sc.MaxLogEntries,
		Guest: opts.Guest, MaxGuestKeys: sc.MaxRLSKeys, Clock: opts.Clock}
}

// timedRedis is the Redis store as the failover store sees it: each batch
// of decisions is timed into observe. It embeds the store so that the
// failover store still finds every interface the Redis store implements
// (leases, settling, cancelling).
type timedRedis struct {
	*redis.Store
	observe func(time.Duration)
}

// DecideEach is the Redis store's, timed.
func (t timedRedis) DecideEach(ctx context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	start := time.Now()
	res, err := t.Store.DecideEach(ctx, dst, reqs, now)
	t.observe(time.Since(start))
	return res, err
}

// DecideAll is the Redis store's, timed.
func (t timedRedis) DecideAll(ctx context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	start := time.Now()
	res, err := t.Store.DecideAll(ctx, dst, reqs, now)
	t.observe(time.Since(start))
	return res, err
}
