package config

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/throttle"
	"go.yaml.in/yaml/v3"
)

// Defaults and bounds of the optional settings.
const (
	DefaultAdmin        = "127.0.0.1:9090"
	DefaultRedisAddr    = "127.0.0.1:6379"
	DefaultRedisTimeout = 50 * time.Millisecond
	MaxRedisTimeout     = 10 * time.Second
	DefaultRedisPrefix  = "sluice:"
	DefaultStoreType    = "memory"
	// DefaultMaxKeys is store.memory.max_keys's default, the memory
	// store's (memory.DefaultMaxKeys: a test keeps them equal, so that
	// config need not import the store).
	DefaultMaxKeys = 1_000_000
	// DefaultMaxRLSKeys is store.memory.max_rls_keys's default: the
	// memory store's guests (memory.DefaultMaxGuestKeys).
	DefaultMaxRLSKeys = 100_000
	DefaultInstances  = 1
	// DefaultLeaseTTL is store.lease_ttl's default (store.DefaultLeaseTTL),
	// MinLeaseTTL its least: a lease renewed every third of a shorter TTL
	// could be lost by a loaded instance while its request is alive.
	DefaultLeaseTTL = store.DefaultLeaseTTL
	MinLeaseTTL     = time.Second
	MinAdminToken   = 16 // characters; a shorter admin.token is a warning
	// DefaultMaxLogEntries bounds the memory store's sliding_log entries
	// (16 bytes each: 160 MB), as memory.DefaultMaxLogEntries does.
	DefaultMaxLogEntries = 10_000_000
)

// File is a whole configuration file: the gateway's settings and the
// policy, with every default filled in.
type File struct {
	// Path is the file's name as given to Load or Parse.
	Path string
	// Listen is the host:port callers connect to. Required, unless Decide
	// is set and Upstream is not: then it is "".
	Listen string
	// Upstream is the protected service: an http or https URL with a host.
	// Required (or Upstreams), unless Decide is set: then nil means sluice
	// runs only the decision service and proxies nothing. With an
	// upstreams list it is the first entry's URL.
	Upstream *url.URL
	// Upstreams are the services requests go to, in order: a request goes
	// to the first whose match fits it. The upstreams list, or the one
	// service of upstream (named DefaultUpstreamName, matching every
	// request); empty when Upstream is nil.
	Upstreams []Upstream
	// Admin is the host:port of metrics, health and reload. Default
	// 127.0.0.1:9090; it must differ from Listen.
	Admin string
	// AdminToken, when not empty, is the bearer token POST /reload and
	// GET /metrics require (admin.token). Default none.
	AdminToken string
	// AdminTokens are further admin tokens by name (admin.tokens): each
	// is accepted wherever AdminToken is, and the audit trail of run-time
	// changes names who made a change by its token's name (AdminToken's
	// is "admin"). Default none.
	AdminTokens map[string]string
	// TLS, when not nil, makes callers speak TLS 1.2 or later on Listen
	// with this certificate (the tls block; config/tls.go). Default none.
	TLS *TLS
	// AdminTLS, when not nil, makes the admin listener speak TLS with this
	// certificate (admin.tls). Default none.
	AdminTLS *TLS
	// Store says where counters are kept.
	Store Store
	// Server is how connections are treated: timeouts, the connection
	// cap, shutdown. Default DefaultServer().
	Server Server
	// LegacyHeaders also sends X-RateLimit-Limit, -Remaining and -Reset.
	// Default false.
	LegacyHeaders bool
	// Protect is what the gateway's throttle enforces: the protect block
	// (in-flight ceiling, adaptive limit, queue, shedding, upstream
	// back-off), without a clock. nil when the file has none: nothing is
	// throttled. Changes take effect on reload, in place
	// (throttle.Throttle.Update).
	Protect *throttle.Config
	// Signals are protect.signals: outside measures sluice reads, and
	// degrades while one is above its line (as if the service were above
	// shed_from), with or without the rest of protect. Changes take
	// effect on reload.
	Signals []Signal
	// Live is what the operators' view keeps: callers listed per rule,
	// the findings' period. Default DefaultLive(). Changes take effect on
	// reload (what was seen starts afresh).
	Live Live
	// AccessLog, when not nil, writes one JSON line per request the
	// gateway answers (the access_log block; config/accesslog.go). Read
	// at start. Default none.
	AccessLog *AccessLog
	// Runtime is how the operators' run-time changes are kept (the
	// runtime block). Default: in a file beside this one.
	Runtime Runtime
	// Policy is the policy as written, with IPv6Prefix (64) and each rule's
	// Key (client when clients are listed, else ip) filled in; Compile
	// fills in the other defaults.
	Policy policy.Policy
	// Decide is the decision service's settings (the decide block); nil
	// when the file has none.
	Decide *Decide
	// Compiled is Policy, compiled.
	Compiled *policy.Compiled
	// Warnings are settings that work but are dangerous (a non-loopback
	// admin address without a token, every address a trusted proxy),
	// sorted by position. `sluice check` prints them and `sluice serve`
	// logs them; they do not make the file invalid.
	Warnings Errors
}

// Store says where counters are kept and what happens when that place
// cannot be reached.
type Store struct {
	// Type is "memory" (the default: counters in this process), "redis"
	// (counters shared by every instance) or "gossip" (each instance's
	// counters, spread to the others).
	Type string
	// Redis is how to reach Redis, with Type "redis".
	Redis Redis
	// Gossip is how the instances find each other and exchange their
	// counts, with Type "gossip" (counters kept by each instance and
	// spread to the others).
	Gossip Gossip
	// OnFailure is what happens to requests while the store cannot decide
	// them, whatever the store. Default store.FailOpen.
	OnFailure store.FailurePolicy
	// Instances is the number of gateway instances sharing the store; with
	// store.FailLocal each one allows limit/Instances on its own. Default 1.
	Instances int
	// MaxKeys bounds the keys the memory store holds (store.memory.max_keys,
	// also the local fallback's bound). Default 1,000,000.
	MaxKeys int
	// MaxLogEntries bounds the sliding_log entries the memory store holds,
	// across its keys (store.memory.max_log_entries, also the local
	// fallback's bound). Default 10,000,000.
	MaxLogEntries int
	// MaxRLSKeys bounds the counters the Envoy rate limit service
	// (decide.grpc) keeps in the memory store, apart from MaxKeys
	// (store.memory.max_rls_keys, also the local fallback's bound): those
	// of the rule files and of descriptors' own limits, whose values the
	// callers pick. Default 100,000.
	MaxRLSKeys int
	// LeaseTTL is how long a concurrency rule's lease lives unless renewed
	// (store.lease_ttl): an instance renews its requests' leases every
	// third of it, and a dead instance's slots are back within it. Default
	// DefaultLeaseTTL; 0 means the default.
	LeaseTTL time.Duration
}

// Equal reports whether s and o are the same settings.
func (s Store) Equal(o Store) bool {
	return s.Type == o.Type && s.OnFailure == o.OnFailure && s.Instances == o.Instances && s.LeaseTTL == o.LeaseTTL &&
		s.MaxKeys == o.MaxKeys && s.MaxLogEntries == o.MaxLogEntries && s.MaxRLSKeys == o.MaxRLSKeys && s.Redis.Equal(o.Redis) && s.Gossip.Equal(o.Gossip)
}

// Redis is how to reach Redis.
type Redis struct {
	// Addrs are host:port addresses: one for a standalone server, several
	// for the seeds of a Redis Cluster. Default [127.0.0.1:6379].
	Addrs []string
	// Timeout is the deadline of each store operation, more than 0 and at
	// most 10s. Default 50ms.
	Timeout time.Duration
	// Username and Password authenticate (Redis ACL); default none.
	Username string
	Password string
	// TLS connects with TLS (tls: true, or tls given as a mapping).
	// Default false.
	TLS bool
	// TLSOptions are the certificate authorities, client certificate and
	// server name of tls given as a mapping; the zero value with tls:
	// true (the system's authorities, no client certificate).
	TLSOptions RedisTLS
	// Prefix starts every key sluice writes. Default "sluice:".
	Prefix string
	// Lease is quota leased by the instance (store.redis.lease): the zero
	// value leases nothing.
	Lease RedisLease
}

// RedisLease is store.redis.lease: a hot key's quota taken Max units at a
// time in one Redis call and admitted locally (not the concurrency
// leases of store.lease_ttl).
type RedisLease struct {
	// Max is the most units one lease takes of a key: 1 to the largest
	// limit of a rate rule. 0: no leases.
	Max int64
	// TTL is the longest a lease lives, and the longest between two
	// decisions on a key for it to be leased: MinRedisLeaseTTL to
	// MaxRedisLeaseTTL. Default DefaultRedisLeaseTTL.
	TTL time.Duration
}

// Bounds of store.redis.lease.ttl, and its default.
const (
	DefaultRedisLeaseTTL = time.Second
	MinRedisLeaseTTL     = 10 * time.Millisecond
	MaxRedisLeaseTTL     = time.Minute
)

// Equal reports whether r and o are the same settings.
func (r Redis) Equal(o Redis) bool {
	return slices.Equal(r.Addrs, o.Addrs) && r.Timeout == o.Timeout && r.Username == o.Username &&
		r.Password == o.Password && r.TLS == o.TLS && r.TLSOptions.Equal(o.TLSOptions) && r.Prefix == o.Prefix && r.Lease == o.Lease
}

// Load reads and parses the file at path. A file that cannot be read gives
// the *fs.PathError, wrapped; a file with problems gives Errors.
func Load(path string) (*File, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// readFile reads the file at path, up to one byte more than MaxFileSize
// (Parse refuses a larger file with its position).
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	return data, nil
}

// Parse parses and validates the configuration in data; name is the file
// name used in errors. It reports every problem it finds, as Errors sorted
// by position.
func Parse(name string, data []byte) (*File, error) {
	return parse(name, data, nil)
}

// LoadOnStore reads and parses the file at path as Load does, for a
// gateway whose store stays running (a reload: a store change takes effect
// after a restart): the rules must also be ones running keeps. With store
// type gossip running, a file that changes the store to another type and
// adds a token_bucket rule is refused, as it would be refused at each
// request.
func LoadOnStore(path string, running Store) (*File, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return parse(path, data, &running)
}

// parse is Parse, for rules decided on running too when it is not nil.
func parse(name string, data []byte, running *Store) (*File, error) {
	root, d, err := parseRoot(name, data, "listen, upstream, rules")
	if err != nil {
		return nil, err
	}
	d.running = running
	f := d.decodeFile(root)
	if !d.failed[""] {
		c, err := policy.Compile(f.Policy)
		d.compileErrors(err)
		f.Compiled = c
		if c != nil {
			d.checkLocalShares(f)
			d.checkLogBound(f)
			d.checkLeaseMax(f)
			d.checkGossipRules(f, c)
		}
	}
	if len(d.errs) > 0 {
		return nil, sortErrors(d.errs)
	}
	f.Warnings = sortErrors(d.warns)
	return f, nil
}

var topFields = []string{"listen", "upstream", "upstreams", "tls", "admin", "trusted_proxies", "forwarded_header",
	"ipv6_prefix", "case_insensitive_paths", "legacy_headers", "server", "store", "protect", "live", "access_log", "runtime", "clients", "plans", "rules", "time_zone", "decide"}

// decodeFile decodes the top-level mapping.
func (d *decoder) decodeFile(root *yaml.Node) *File {
	f := &File{Path: d.file, Admin: DefaultAdmin}
	if root.Kind != yaml.MappingNode {
		d.fail(root, "", "the file must be a mapping of settings (listen, upstream, rules, ...), not %s", kindName(root))
		return f
	}
	m := d.fields(root, "", "a mapping of settings", topFields)
	f.Decide = d.decide(m["decide"], "decide")
	several := !isNull(m["upstreams"])
	alone := f.Decide != nil && isNull(m["upstream"]) && !several // the decision service only
	d.decideAlone(m, f)
	if !alone && d.required(m, root, "", "listen", "listen: 127.0.0.1:8080") {
		f.Listen = d.hostPort(m["listen"], "listen", false)
	}
	switch {
	case several && !isNull(m["upstream"]):
		d.fail(d.keys["upstreams"], "upstreams", "upstream is given too (upstream is the one-service form of upstreams: keep one of them)")
	case several:
		f.Upstreams = d.upstreams(m["upstreams"], "upstreams", f.Listen)
		if len(f.Upstreams) > 0 {
			f.Upstream = f.Upstreams[0].URL
		}
	case !alone && d.required(m, root, "", "upstream", "upstream: http://127.0.0.1:9000, or an upstreams list"):
		f.Upstream = d.upstream(m["upstream"], "upstream")
		if f.Upstream != nil && f.Listen != "" && loopsToListen(f.Listen, f.Upstream) {
			d.fail(m["upstream"], "upstream", "%s is sluice's own listen address %s: every request would come back to sluice (point upstream at the protected service)",
				f.Upstream.Redacted(), f.Listen)
		}
		if f.Upstream != nil {
			f.Upstreams = []Upstream{{Name: DefaultUpstreamName, URL: f.Upstream}}
		}
	}
	if !d.admin(m["admin"], f) && f.Listen != "" && sameAddr(f.Admin, f.Listen) {
		d.fail(m["listen"], "listen", "%s is also the admin port's default address %s (set admin to another address, such as admin: 127.0.0.1:9091)", f.Listen, DefaultAdmin)
	}
	f.Server = d.server(m["server"], "server")
	f.TLS = d.tls(m["tls"], "tls", true)
	d.tlsAlone(m, f)
	f.Store = d.store(m["store"], "store")
	f.LegacyHeaders = d.boolean(m["legacy_headers"], "legacy_headers")
	f.Protect, f.Signals = d.protect(m["protect"], "protect")
	f.Live = d.live(m["live"], "live")
	f.AccessLog = d.accessLog(m["access_log"], "access_log")
	f.Runtime = d.runtime(m["runtime"], "runtime", d.file)
	envoyRules := f.Decide != nil && d.nodes["decide.envoy_config[0]"] != nil // even if a path is wrong
	f.Policy = d.policy(m, root, envoyRules)
	d.certsUnverified(f)
	d.checkDecideAddrs(f)
	d.checkDecideRules(f)
	d.checkGossipAddrs(f)
	return f
}
