package gateway

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/sluice-rl/sluice/config"
)

// Reload reads the configuration file again and, if it is valid, puts its
// policy, upstream and settings in force, at once, for the requests that
// start afterwards. A bad file is refused: the error is returned and
// logged and the old policy stays. Counters of unchanged rules survive,
// since the store keys state by rule name and limit. A protect block
// takes effect too, on the gateway's one Throttle, updated in place:
// requests in flight keep their slots. The live state (live.go) keeps
// what was seen of rules that count as before; a changed live block
// starts it afresh; changed signals (protect.signals) are read anew,
// keeping what was read of those kept. Listen, admin, server, store and
// decide settings, and adding or removing the upstream, need a restart; a
// change of them is logged and otherwise ignored.
func (g *Gateway) Reload() error {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	old := g.config()
	cfg, err := config.Load(old.Path)
	if err != nil {
		g.metrics.reloads.WithLabelValues("failed").Inc()
		g.log.Error("reload refused; previous configuration stays", "file", old.Path, "err", err.Error())
		return err
	}
	g.logWarnings(cfg)
	if cfg.Listen != old.Listen || cfg.Admin != old.Admin || cfg.AdminToken != old.AdminToken || !maps.Equal(cfg.AdminTokens, old.AdminTokens) || !cfg.Store.Equal(old.Store) ||
		cfg.Server != old.Server || cfg.Runtime != old.Runtime {
		g.log.Warn("listen, admin, server, store and runtime changes take effect after a restart", "file", old.Path)
		cfg.Listen, cfg.Admin, cfg.AdminToken, cfg.AdminTokens, cfg.Store, cfg.Server = old.Listen, old.Admin, old.AdminToken, old.AdminTokens, old.Store, old.Server
		cfg.Runtime = old.Runtime
	}
	if keepListenerTLS(cfg, old) { // tls.go
		g.log.Warn("tls and admin.tls changes take effect after a restart (the files' contents are followed)", "file", old.Path)
	}
	g.tls.reread()
	if !cfg.Decide.Equal(old.Decide) || (cfg.Upstream == nil) != (old.Upstream == nil) {
		g.log.Warn("decide changes, and adding or removing upstream, take effect after a restart", "file", old.Path)
		cfg.Decide = old.Decide
		if (cfg.Upstream == nil) != (old.Upstream == nil) {
			cfg.Upstream = old.Upstream // what is served stays: the gateway, or the decision service alone
		}
	}
	if _, err := g.applyProtect(cfg); err != nil { // in place: the slots, queue and holds stay
		g.metrics.reloads.WithLabelValues("failed").Inc()
		g.log.Error("reload refused; previous configuration stays", "file", old.Path, "err", err.Error())
		return err
	}
	prev := g.snap.Load()
	next := g.newSnapshot(cfg, prev)
	g.snap.Store(next) // policy, upstream, settings and throttle at once
	g.reloadLive(cfg, next.settings.Policy)
	g.reloadSignals(cfg)
	if prev.proxy != nil && prev.proxy != next.proxy {
		prev.proxy.Close() // another upstream: the old one's idle connections go; requests on it finish
	}
	g.metrics.reloads.WithLabelValues("ok").Inc()
	g.log.Info("configuration reloaded", "file", cfg.Path, "rules", cfg.Compiled.Rules())
	return nil
}

// WatchConfig reloads when the configuration file changes, until ctx ends.
// It watches the file's directory, since editors replace the file rather
// than write it, and Kubernetes swaps a "..data" link beside it without
// touching the file's own name: any event there, after debounce, reloads if
// the file's contents differ from what was last read.
func (g *Gateway) WatchConfig(ctx context.Context, debounce time.Duration) error {
	path := g.config().Path
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("gateway: watch %s: %w", path, err)
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(path)); err != nil {
		return fmt.Errorf("gateway: watch %s: %w", path, err)
	}
	last := g.startSum // what the gateway started with (about when it was loaded)
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-w.Events:
			if !ok {
				return nil
			}
			fire = time.After(debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			g.log.Warn("config watch error", "err", err.Error())
		case <-fire:
			fire = nil
			if sum := fileSum(path); sum != last {
				last = sum
				_ = g.Reload() // a refused reload is logged and counted by Reload
			}
		}
	}
}

// fileSum is a digest of the file's contents ("" if it cannot be read).
func fileSum(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return string(sum[:])
}
