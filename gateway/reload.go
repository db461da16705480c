package gateway

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
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
// keeping what was read of those kept. Listen, admin, server, store,
// access_log and decide settings, and adding or removing the upstream, need a restart; a
// change of them is logged and otherwise ignored. The rules are checked
// against the running store as well as the file's (config.LoadOnStore).
func (g *Gateway) Reload() error {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	old := g.config()
	cfg, err := config.LoadOnStore(old.Path, old.Store) // the rules are decided on the store in force
	if err != nil {
		g.metrics.reloads.WithLabelValues("failed").Inc()
		LogConfigErrors(g.log, "reload refused; previous configuration stays", old.Path, err)
		return err
	}
	g.logWarnings(cfg)
	inFile := changedFields(old, cfg)
	if cfg.Listen != old.Listen || cfg.Admin != old.Admin || cfg.AdminToken != old.AdminToken || !maps.Equal(cfg.AdminTokens, old.AdminTokens) || !cfg.Store.Equal(old.Store) ||
		cfg.Server != old.Server || cfg.Runtime != old.Runtime || !reflect.DeepEqual(cfg.AccessLog, old.AccessLog) {
		g.log.Warn("listen, admin, server, store, runtime and access_log changes take effect after a restart", "file", old.Path,
			"fields", restartOnly(inFile, changedFields(old, cfg)))
		cfg.Listen, cfg.Admin, cfg.AdminToken, cfg.AdminTokens, cfg.Store, cfg.Server = old.Listen, old.Admin, old.AdminToken, old.AdminTokens, old.Store, old.Server
		cfg.Runtime, cfg.AccessLog = old.Runtime, old.AccessLog
	}
	if keepListenerTLS(cfg, old) { // tls.go
		g.log.Warn("tls and admin.tls changes take effect after a restart (the files' contents are followed)", "file", old.Path)
	}
	g.tls.reread()
	if !cfg.Decide.Equal(old.Decide) || (cfg.Upstream == nil) != (old.Upstream == nil) {
		g.log.Warn("decide changes, and adding or removing upstream, take effect after a restart", "file", old.Path,
			"fields", restartOnly(inFile, changedFields(old, cfg)))
		cfg.Decide = old.Decide
		if (cfg.Upstream == nil) != (old.Upstream == nil) {
			cfg.Upstream, cfg.Upstreams = old.Upstream, old.Upstreams // what is served stays: the gateway, or the decision service alone
		}
	}
	if err := g.applyProtect(cfg); err != nil { // in place: the slots, queue and holds stay
		g.metrics.reloads.WithLabelValues("failed").Inc()
		LogConfigErrors(g.log, "reload refused; previous configuration stays", old.Path, err)
		return err
	}
	prev := g.snap.Load()
	next := g.newSnapshot(cfg, prev)
	g.setSnapshot(next) // policy, upstream, settings and throttle at once
	g.reloadLive(cfg, next.front.Settings.Policy)
	g.reloadSignals(cfg)
	closeRoutes(prev, next)
	g.metrics.reloads.WithLabelValues("ok").Inc()
	g.metrics.loaded(g.opts.Clock.Now())
	added, removed, changed := ruleChanges(prev.ruleDigests, next.ruleDigests)
	g.log.Info("configuration reloaded", "file", cfg.Path, "config_version", next.version, "previous_version", prev.version,
		"changed", changedFields(old, cfg), "rules_added", added, "rules_removed", removed, "rules_changed", changed,
		"rules", cfg.Compiled.Rules())
	return nil
}

// LogConfigErrors logs why a configuration file was refused, with msg:
// one JSON line per problem, with its file, line and column (and the
// message as err), as a refused start and a refused reload both log them.
// An error that is not config.Errors is one line naming path.
func LogConfigErrors(log *slog.Logger, msg, path string, err error) {
	var errs config.Errors
	if !errors.As(err, &errs) {
		log.Error(msg, "file", path, "err", err.Error())
		return
	}
	for _, e := range errs {
		log.Error(msg, "file", e.File, "line", e.Line, "col", e.Col, "err", e.Msg)
	}
}

// topFields are the top-level fields of a configuration file as a reload
// compares them, each with the part of a config.File it decodes to.
var topFields = []struct {
	name string
	of   func(*config.File) any
}{
	{"listen", func(f *config.File) any { return f.Listen }},
	{"upstream", func(f *config.File) any { return f.Upstream }},
	{"upstreams", func(f *config.File) any { return f.Upstreams }},
	{"admin", func(f *config.File) any { return []any{f.Admin, f.AdminToken, f.AdminTokens} }},
	{"trusted_proxies", func(f *config.File) any { return f.Policy.TrustedProxies }},
	{"forwarded_header", func(f *config.File) any { return f.Policy.ForwardedHeader }},
	{"ipv6_prefix", func(f *config.File) any { return f.Policy.IPv6Prefix }},
	{"case_insensitive_paths", func(f *config.File) any { return f.Policy.CaseInsensitivePaths }},
	{"legacy_headers", func(f *config.File) any { return f.LegacyHeaders }},
	{"server", func(f *config.File) any { return f.Server }},
	{"store", func(f *config.File) any { return storeSettings(f.Store) }},
	{"protect", func(f *config.File) any { return []any{f.Protect, f.Signals} }},
	{"live", func(f *config.File) any { return f.Live }},
	{"access_log", func(f *config.File) any { return f.AccessLog }},
	{"runtime", func(f *config.File) any { return f.Runtime }},
	{"clients", func(f *config.File) any { return f.Policy.Clients }},
	{"plans", func(f *config.File) any { return f.Policy.Plans }},
	{"rules", func(f *config.File) any { return f.Policy.Rules }},
	{"time_zone", func(f *config.File) any { return zoneName(f.Policy.Location) }},
	{"decide", func(f *config.File) any { return f.Decide }},
}

// storeSettings is s as a reload compares it: the TLS authorities' pool,
// whose parsed certificates hold functions that never compare equal, is
// replaced by its certificates' subjects.
func storeSettings(s config.Store) any {
	pool := s.Redis.TLSOptions.RootCAs
	s.Redis.TLSOptions.RootCAs = nil
	var subjects [][]byte
	if pool != nil {
		subjects = pool.Subjects() //nolint:staticcheck // the pool is the file's, not the system's
	}
	return []any{s, subjects}
}

// changedFields names the top-level fields whose values differ between
// two configurations, in the file's order: what a reload log line says
// changed. Values are compared, never logged: some are secrets.
func changedFields(old, cfg *config.File) []string {
	out := []string{}
	for _, f := range topFields {
		if !reflect.DeepEqual(f.of(old), f.of(cfg)) {
			out = append(out, f.name)
		}
	}
	return out
}

// restartOnly are the fields of inFile (changed in the file) that are not
// in applied (changed in what a reload puts in force).
func restartOnly(inFile, applied []string) []string {
	out := []string{}
	for _, f := range inFile {
		if !slices.Contains(applied, f) {
			out = append(out, f)
		}
	}
	return out
}

// ruleChanges compares two configurations' rule digests (ruleDigests): the
// rules added, removed, and changed (the rule, or a plan's or client's
// limit of it), each by name, sorted.
func ruleChanges(old, cur map[string]string) (added, removed, changed []string) {
	added, removed, changed = []string{}, []string{}, []string{}
	for _, name := range slices.Sorted(maps.Keys(cur)) {
		switch d, ok := old[name]; {
		case !ok:
			added = append(added, name)
		case d != cur[name]:
			changed = append(changed, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(old)) {
		if _, ok := cur[name]; !ok {
			removed = append(removed, name)
		}
	}
	return added, removed, changed
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
