package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// hostPort decodes a host:port address. The host may be empty (every
// interface) unless needHost; the port is 0 to 65535 (1 to 65535 with
// needHost, for addresses to connect to).
func (d *decoder) hostPort(n *yaml.Node, path string, needHost bool) string {
	s, ok := d.scalar(n, path, "host:port")
	if !ok {
		return ""
	}
	example := "such as 127.0.0.1:8080, [::1]:8080 or :8080"
	if needHost {
		example = "such as 127.0.0.1:6379 or redis.internal:6379"
	}
	host, port, err := net.SplitHostPort(s)
	switch {
	case err != nil:
		d.fail(n, path, "%q is not host:port (%s)", clip(s), example)
	case !validPort(port, needHost):
		d.fail(n, path, "%q: port %q is not a number from %d to 65535 (%s)", clip(s), clip(port), b2i(needHost), example)
	case needHost && host == "" || !validHost(host):
		d.fail(n, path, "%q: %q is not an IP address or host name (%s)", clip(s), clip(host), example)
	default:
		return s
	}
	return ""
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func validPort(port string, nonZero bool) bool {
	if port == "" || strings.Trim(port, "0123456789") != "" || len(port) > 5 {
		return false
	}
	p, _ := strconv.Atoi(port)
	return p <= 65535 && (p > 0 || !nonZero)
}

// validHost reports whether host is empty, an IP address or a DNS name.
func validHost(host string) bool {
	if host == "" {
		return true
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	if len(host) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' ||
			strings.Trim(strings.ToLower(label), "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return false
		}
	}
	return true
}

// sameAddr reports whether two listen addresses would clash: the same
// non-zero port on the same host, or on all interfaces.
func sameAddr(a, b string) bool {
	ha, pa, _ := net.SplitHostPort(a)
	hb, pb, _ := net.SplitHostPort(b)
	if pa != pb || pa == "0" {
		return false
	}
	any := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return ha == hb || any(ha) || any(hb)
}

// withoutUserInfo returns the URL text s with the user info of its
// authority (user name and password, before '@') replaced by "xxxxx",
// whether or not s parses.
func withoutUserInfo(s string) string {
	_, rest, ok := strings.Cut(s, "//")
	if !ok {
		return s
	}
	start := len(s) - len(rest)
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	at := strings.LastIndexByte(authority, '@')
	if at < 0 {
		return s
	}
	return s[:start] + "xxxxx" + s[start+at:]
}

// upstream decodes the protected service's URL.
func (d *decoder) upstream(n *yaml.Node, path string) *url.URL {
	s, ok := d.scalar(n, path, "a URL")
	if !ok {
		return nil
	}
	const want = "an http or https URL with a host, such as http://127.0.0.1:9000"
	u, err := url.Parse(s)
	shown := clip(withoutUserInfo(s)) // errors are logged: never a password
	switch {
	case err != nil:
		d.fail(n, path, "%q is not a URL (%s)", shown, want)
	case u.Scheme != "http" && u.Scheme != "https":
		d.fail(n, path, "%q: scheme %q is not http or https (%s)", shown, clip(u.Scheme), want)
	case u.Hostname() == "" || !validHost(u.Hostname()):
		d.fail(n, path, "%q has no valid host (%s)", shown, want)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		d.fail(n, path, "%q: user info, query and fragment are not used (%s, optionally with a path)", shown, want)
	default:
		return u
	}
	return nil
}

// onFailureNames are store.on_failure's values, each at the index of its
// store.FailurePolicy.
var onFailureNames = []string{store.FailOpen.String(), store.FailClosed.String(), store.FailLocal.String()}

var (
	storeFields  = []string{"type", "redis", "gossip", "memory", "on_failure", "instances", "lease_ttl"}
	redisFields  = []string{"addrs", "timeout", "username", "password", "tls", "prefix", "lease"}
	leaseFields  = []string{"max", "ttl"}
	memoryFields = []string{"max_keys", "max_log_entries", "max_rls_keys"}
)

// store decodes the store block.
func (d *decoder) store(n *yaml.Node, path string) Store {
	m := d.fields(n, path, "a mapping (type, redis, gossip, memory, on_failure, instances, lease_ttl)", storeFields)
	var s Store
	s.Type = d.oneOf(m["type"], join(path, "type"), DefaultStoreType, []string{"memory", "redis", "gossip"})
	s.Redis = d.redis(m["redis"], join(path, "redis"), s.Type == "redis")
	s.Gossip = d.gossip(m["gossip"], join(path, "gossip"), s.Type == "gossip", m["type"])
	mem := d.fields(m["memory"], join(path, "memory"), "a mapping (max_keys, max_log_entries, max_rls_keys)", memoryFields)
	s.MaxKeys = int(d.integer(mem["max_keys"], join(path, "memory.max_keys"), 1, 1_000_000_000, DefaultMaxKeys,
		fmt.Sprintf("1 to 1000000000; default %d", DefaultMaxKeys)))
	s.MaxLogEntries = int(d.integer(mem["max_log_entries"], join(path, "memory.max_log_entries"), limiter.MaxLogRate, 1_000_000_000,
		DefaultMaxLogEntries, fmt.Sprintf("%d to 1000000000; default %d", limiter.MaxLogRate, DefaultMaxLogEntries)))
	s.MaxRLSKeys = int(d.integer(mem["max_rls_keys"], join(path, "memory.max_rls_keys"), 1, 1_000_000_000, DefaultMaxRLSKeys,
		fmt.Sprintf("1 to 1000000000; default %d", DefaultMaxRLSKeys)))
	fail := d.oneOf(m["on_failure"], join(path, "on_failure"), store.FailOpen.String(), onFailureNames)
	s.OnFailure = store.FailurePolicy(slices.Index(onFailureNames, fail)) // oneOf returns a listed name
	s.Instances = int(d.integer(m["instances"], join(path, "instances"), 1, 10_000, DefaultInstances,
		fmt.Sprintf("1 to 10000; default %d", DefaultInstances)))
	s.LeaseTTL = d.leaseTTL(m["lease_ttl"], join(path, "lease_ttl"))
	return s
}

// leaseTTL decodes store.lease_ttl: a Go duration from MinLeaseTTL to
// store.MaxLeaseTTL, in whole milliseconds (Redis expires to the
// millisecond).
func (d *decoder) leaseTTL(n *yaml.Node, path string) time.Duration {
	v, ok := d.durationIn(n, path,
		func(v time.Duration) bool {
			return v >= MinLeaseTTL && v <= store.MaxLeaseTTL && v%time.Millisecond == 0
		},
		fmt.Sprintf("such as 10s, 1m; default %v", DefaultLeaseTTL),
		fmt.Sprintf("%v to %v in whole milliseconds; default %v", MinLeaseTTL, store.MaxLeaseTTL, DefaultLeaseTTL))
	if !ok {
		return DefaultLeaseTTL
	}
	return v
}

// addrList decodes a list of host:port addresses, each once; items
// reports how many the list had, written well or not.
func (d *decoder) addrList(n *yaml.Node, path string) (addrs []string, items int) {
	seen := map[string]bool{}
	list := d.list(n, path, "host:port addresses")
	for i, a := range list {
		at := index(path, i)
		addr := d.hostPort(a, at, true)
		if seen[addr] {
			d.fail(a, at, "duplicate address %q", addr)
		} else if addr != "" {
			seen[addr] = true
			addrs = append(addrs, addr)
		}
	}
	return addrs, len(list)
}

// redis decodes the redis block; the default address applies when used.
func (d *decoder) redis(n *yaml.Node, path string, used bool) Redis {
	r := Redis{Timeout: DefaultRedisTimeout, Prefix: DefaultRedisPrefix}
	m := d.fields(n, path, "a mapping ("+strings.Join(redisFields, ", ")+")", redisFields)
	r.Addrs, _ = d.addrList(m["addrs"], join(path, "addrs"))
	if len(r.Addrs) == 0 && used {
		r.Addrs = []string{DefaultRedisAddr}
	}
	r.Timeout = d.duration(m["timeout"], join(path, "timeout"), r.Timeout)
	r.Username, _ = d.secret(m["username"], join(path, "username"), "a user name")
	r.Password, _ = d.secret(m["password"], join(path, "password"), "a password")
	r.TLS, r.TLSOptions = d.redisTLS(m["tls"], join(path, "tls"))
	if p := m["prefix"]; !isNull(p) {
		r.Prefix = d.str(p, join(path, "prefix"), "a key prefix", r.Prefix)
		if r.Prefix == "" || len(r.Prefix) > 64 || strings.ContainsAny(r.Prefix, " \t\r\n") {
			d.fail(p, join(path, "prefix"), "%q is not a key prefix (1 to 64 characters without spaces; default %q)", clip(r.Prefix), DefaultRedisPrefix)
			r.Prefix = DefaultRedisPrefix
		}
	}
	r.Lease = d.redisLease(m["lease"], join(path, "lease"))
	return r
}

// redisLease decodes store.redis.lease: {max: N, ttl: DURATION}.
func (d *decoder) redisLease(n *yaml.Node, path string) RedisLease {
	if isNull(n) {
		return RedisLease{}
	}
	m := d.fields(n, path, "a mapping (max, ttl)", leaseFields)
	l := RedisLease{TTL: DefaultRedisLeaseTTL}
	if d.required(m, n, path, "max", "max: 10") {
		l.Max = d.integer(m["max"], join(path, "max"), 1, limiter.MaxBurst, 0,
			fmt.Sprintf("1 to %d: the most units one lease takes of a key", limiter.MaxBurst))
	}
	if v, ok := d.durationIn(m["ttl"], join(path, "ttl"),
		func(v time.Duration) bool { return v >= MinRedisLeaseTTL && v <= MaxRedisLeaseTTL },
		fmt.Sprintf("such as 500ms, 2s; default %v", DefaultRedisLeaseTTL),
		fmt.Sprintf("%v to %v; default %v", MinRedisLeaseTTL, MaxRedisLeaseTTL, DefaultRedisLeaseTTL)); ok {
		l.TTL = v
	}
	return l
}

// duration decodes the store timeout: a Go duration, more than 0 and at
// most MaxRedisTimeout.
func (d *decoder) duration(n *yaml.Node, path string, def time.Duration) time.Duration {
	v, ok := d.durationIn(n, path, func(v time.Duration) bool { return v > 0 && v <= MaxRedisTimeout },
		fmt.Sprintf("such as 50ms, 1s; default %v", def), fmt.Sprintf("more than 0, at most %v", MaxRedisTimeout))
	if !ok {
		return def
	}
	return v
}

// durationIn returns the Go duration at n and true when inRange accepts
// it; false when n is absent or wrong (reported, with examples after a
// value that is not a duration and accepted after one out of range).
func (d *decoder) durationIn(n *yaml.Node, path string, inRange func(time.Duration) bool, examples, accepted string) (time.Duration, bool) {
	s, ok := d.scalar(n, path, "a duration")
	if !ok {
		return 0, false
	}
	v, err := time.ParseDuration(s)
	switch {
	case err != nil:
		d.fail(n, path, "%q is not a duration (%s)", clip(s), examples)
	case !inRange(v):
		d.fail(n, path, "%v is out of range (%s)", v, accepted)
	default:
		return v, true
	}
	return 0, false
}

var adminFields = []string{"listen", "token", "tokens", "tls"}

// admin decodes the admin setting: host:port as a scalar, or a mapping
// {listen: host:port, token: SECRET, tokens: {NAME: SECRET, ...}, tls: {cert, key}}. It warns when the address is
// reachable from other machines and no token guards it, and reports
// whether the file gives an address.
func (d *decoder) admin(n *yaml.Node, f *File) (given bool) {
	if isNull(n) {
		return false
	}
	addrNode, addrPath := n, "admin"
	if n.Kind == yaml.MappingNode {
		m := d.fields(n, "admin", "a mapping (listen, token, tokens, tls)", adminFields)
		f.AdminTLS = d.tls(m["tls"], "admin.tls", false)
		addrNode, addrPath = m["listen"], "admin.listen"
		if t := m["token"]; !isNull(t) {
			f.AdminToken = d.token(t, "admin.token")
		}
		d.adminTokens(m["tokens"], f)
	}
	if isNull(addrNode) {
		return false // admin: {token: ...} keeps the default address
	}
	addr := d.hostPort(addrNode, addrPath, false)
	if addr == "" {
		return true
	}
	f.Admin = addr
	if f.Listen != "" && sameAddr(f.Admin, f.Listen) {
		d.fail(addrNode, addrPath, "%s is also listen's address (the admin port must differ; default %s)", f.Admin, DefaultAdmin)
	}
	if f.AdminToken == "" && len(f.AdminTokens) == 0 && !loopback(f.Admin) {
		d.warnf(addrNode, addrPath, "%s is reachable from other machines and no admin.token is set: anyone who reaches it can reload the configuration and read the metrics (bind 127.0.0.1, or set admin: {listen: %s, token: env:SLUICE_ADMIN_TOKEN})", f.Admin, f.Admin)
	}
	return true
}

// token decodes one admin token at path.
func (d *decoder) token(n *yaml.Node, path string) string {
	tok, _ := d.secret(n, path, "a token")
	if !visibleASCII(tok) {
		d.fail(n, path, "the token holds a space, a control or a non-ASCII character (a bearer token is visible ASCII characters only, such as the output of `openssl rand -hex 16`; an Authorization header loses spaces and newlines at its ends)")
	} else if l := len(tok); l > 0 && l < MinAdminToken {
		d.warnf(n, path, "the token is %d characters: easy to guess (at least %d random characters, such as the output of `openssl rand -hex 16`)", l, MinAdminToken)
	}
	return tok
}

// adminTokens decodes admin.tokens, a mapping of names to tokens: each
// operator (or tool) its own token, whose name the audit trail of run-time
// changes records.
func (d *decoder) adminTokens(n *yaml.Node, f *File) {
	if isNull(n) {
		return
	}
	es, _ := d.entries(n, "admin.tokens", "a mapping of names to tokens, such as {alice: env:ALICE_TOKEN}")
	owner := map[string]string{}
	if f.AdminToken != "" {
		owner[f.AdminToken] = "admin.token"
	}
	for _, e := range es {
		name, path := e.key.Value, join("admin.tokens", e.key.Value)
		if !validTokenName(name) {
			d.fail(e.key, path, "%q is not a valid name (letters, digits, '_', '-', '.'; 1 to 64: it names the operator in the audit trail)", clip(name))
			continue
		}
		tok := d.token(e.val, path)
		if tok == "" {
			d.fail(e.val, path, "empty (a token of at least %d random characters, such as env:%s_TOKEN)", MinAdminToken, strings.ToUpper(name))
			continue
		}
		if other, dup := owner[tok]; dup {
			d.fail(e.val, path, "the same token as %s (each name needs its own token, or the audit trail cannot tell them apart)", other)
			continue
		}
		owner[tok] = path
		if f.AdminTokens == nil {
			f.AdminTokens = map[string]string{}
		}
		f.AdminTokens[name] = tok
	}
}

// validTokenName reports whether s can name an admin token.
func validTokenName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// loopback reports whether a listen address binds only the loopback
// interface: a loopback IP address or "localhost".
func loopback(addr string) bool {
	host, _, _ := net.SplitHostPort(addr)
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// visibleASCII reports whether s holds only visible ASCII characters, as
// the token of an Authorization: Bearer header must.
func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
