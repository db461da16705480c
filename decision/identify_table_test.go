package decision_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// A listed key identifies its client, named to the service (Client) and
// in the Report; the caller's own X-Sluice-Client is removed.
func TestIdentifyKnownKey(t *testing.T) {
	r := newRig(t, partners())
	s := r.do(call{key: "key-a", h: hdr{"X-Sluice-Client": {"partner-b", "admin"}}})
	want(t, s, 0, "key-a")
	if s.client != "partner-a" || s.rep.Client != "partner-a" || !slices.Equal(s.removed, []string{"X-Sluice-Client"}) {
		t.Errorf("client %q, report client %q, removed %q; want partner-a, partner-a, [X-Sluice-Client]", s.client, s.rep.Client, s.removed)
	}
}

// An unknown, missing or unusable key with unknown: reject is answered 401
// before anything is counted: no rule asked, no counter made, no
// rate-limit fields, and the body never repeats the key.
func TestIdentifyUnknownKeyRejected(t *testing.T) {
	long := strings.Repeat("k", 64<<10)
	for _, c := range []struct {
		name string
		keys []string // X-Api-Key field lines
	}{
		{"missing", nil},
		{"unknown", []string{"key-z"}},
		{"empty", []string{""}},
		{"blank", []string{" "}},
		{"other case", []string{"KEY-A"}},
		{"padded", []string{"key-a "}},
		{"NUL", []string{"key-a\x00"}},
		{"newline", []string{"key-a\r\nX-Sluice-Client: partner-a"}},
		{"non-ASCII", []string{"kéy-a"}},
		{"64 KiB", []string{long}},
		{"a key with 64 KiB appended", []string{"key-a" + long}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, partners())
			h := hdr{"X-Sluice-Client": {"partner-a"}}
			if c.keys != nil {
				h["X-Api-Key"] = c.keys
			}
			s := r.do(call{h: h})
			want(t, s, 401, c.name)
			if !strings.Contains(s.detail(), "X-API-Key") || s.fields["Www-Authenticate"] != `ApiKey header="X-API-Key"` {
				t.Errorf("detail %q, WWW-Authenticate %q: want both to name X-API-Key", s.detail(), s.fields["Www-Authenticate"])
			}
			for _, k := range c.keys {
				if strings.TrimSpace(k) != "" && strings.Contains(s.detail(), k) {
					t.Errorf("the detail repeats the key %q", k)
				}
			}
			if s.fields["Ratelimit"] != "" || s.fields["Retry-After"] != "" {
				t.Errorf("a 401 with rate-limit fields: %q", s.fields)
			}
			if s.rep.Client != decision.UnknownClient || s.rep.Status != 401 || len(s.rep.Rules) != 0 || r.mem.Len() != 0 {
				t.Errorf("report %+v, %d counters; want client unknown, status 401, no rules, no counter", s.rep, r.mem.Len())
			}
			if s.client != "" || !slices.Contains(s.removed, "X-Sluice-Client") {
				t.Errorf("client %q, removed %q", s.client, s.removed)
			}
		})
	}
}

// The key is checked before any rule is matched: a path no rule matches
// is a 401 too, and a known key passes there without asking the store.
func TestIdentifyBeforeRules(t *testing.T) {
	r := newRig(t, partners())
	want(t, r.do(call{path: "/health"}), 401, "no key, no rule")
	s := r.do(call{path: "/health", key: "key-a"})
	want(t, s, 0, "known key, no rule")
	if s.rep.Client != "partner-a" || len(s.rep.Rules) != 0 || r.mem.Len() != 0 || s.fields["Ratelimit"] != "" {
		t.Errorf("report %+v, %d counters, fields %q; want partner-a, nothing counted", s.rep, r.mem.Len(), s.fields)
	}
}

// clients.key_header names the header the key is read from; X-API-Key is
// then no key.
func TestIdentifyCustomKeyHeader(t *testing.T) {
	p := partners()
	p.Clients.KeyHeader = "Authorization-Key"
	r := newRig(t, p)
	s := r.do(call{key: "key-a"})
	want(t, s, 401, "X-API-Key")
	if !strings.Contains(s.detail(), "Authorization-Key") {
		t.Errorf("detail %q does not name Authorization-Key", s.detail())
	}
	if s := r.do(call{h: hdr{"Authorization-Key": {"key-b"}}}); !s.pass || s.client != "partner-b" {
		t.Errorf("custom header: %+v, want partner-b passed", s)
	}
}

// anonymousPolicy admits unknown callers, counted by address under plan
// anonymous (1 a minute), while listed clients count by id at 3.
func anonymousPolicy() policy.Policy {
	p := partners()
	p.Clients.Unknown = policy.UnknownAnonymous
	p.Plans[policy.AnonymousPlan] = policy.Plan{Limits: map[string]policy.Rate{"claims": rate(1, time.Minute)}}
	return p
}

// Unknown callers with unknown: anonymous are counted by address, an
// unknown or respelled key on the same counter as none.
func TestIdentifyAnonymousByAddress(t *testing.T) {
	r := newRig(t, anonymousPolicy())
	for _, s := range []struct {
		name   string
		c      call
		status int
		client string
	}{
		{"no key, first from .1", call{peer: "192.0.2.1:1000"}, 0, "anonymous"},
		{"unknown key from .1: the same counter", call{peer: "192.0.2.1:2000", key: "nope"}, 429, "anonymous"},
		{"respelled key from .1: unknown", call{peer: "192.0.2.1:3000", h: hdr{"X_api_key": {"key-a"}}}, 429, "anonymous"},
		{"no key from .2: a counter of its own", call{peer: "192.0.2.2:1000"}, 0, "anonymous"},
		{"no key from .2 again", call{peer: "192.0.2.2:1000"}, 429, "anonymous"},
		{"partner-a from .1: counted by id", call{peer: "192.0.2.1:1000", key: "key-a"}, 0, "partner-a"},
	} {
		got := r.do(s.c)
		want(t, got, s.status, s.name)
		if got.rep.Client != s.client || got.pass && got.client != s.client {
			t.Errorf("%s: client %q, report client %q; want %q", s.name, got.client, got.rep.Client, s.client)
		}
		if s.status == 429 && (!strings.HasPrefix(got.detail(), "192.0.2.") || !strings.Contains(got.detail(), "exceeded 1 request per 1m")) {
			t.Errorf("%s: detail %q, want the caller's address and the anonymous plan's 1/m", s.name, got.detail())
		}
	}
}

// With unknown: anonymous and no client listed yet, every caller is
// anonymous, under the anonymous plan, not the rule's own rate.
func TestIdentifyAnonymousWithoutClients(t *testing.T) {
	p := anonymousPolicy()
	p.Clients.List = nil
	r := newRig(t, p)
	if s := r.do(call{}); !s.pass || s.client != "anonymous" || s.rep.Client != "anonymous" {
		t.Errorf("first: %+v, want anonymous passed", s)
	}
	want(t, r.do(call{}), 429, "second (plan anonymous: 1/m)")
}

// Without clients nobody is identified by key: the key header is not
// read, no client is named (Client ""), the Report says "-", and the
// caller's X-Sluice-Client is still removed.
func TestIdentifyNobodyWithoutClients(t *testing.T) {
	r := newRig(t, byIP(10))
	s := r.do(call{key: "key-a", h: hdr{"X-Sluice-Client": {"partner-a"}}})
	want(t, s, 0, "no clients")
	if s.client != "" || s.rep.Client != "-" || !slices.Equal(s.removed, []string{"X-Sluice-Client"}) {
		t.Errorf("client %q, report client %q, removed %q", s.client, s.rep.Client, s.removed)
	}
}

// A caller is counted by its peer's address, whatever the port, an
// IPv4-mapped IPv6 peer as its IPv4 address; a peer that is no trusted
// proxy is not believed for X-Forwarded-For or Forwarded. Each step is
// the second request of a 1-a-minute rule: refused when it shares the
// first's counter.
func TestIdentifyPeerAddress(t *testing.T) {
	spoof := hdr{"X-Forwarded-For": {"203.0.113.9"}, "Forwarded": {"for=203.0.113.9"}}
	for _, c := range []struct {
		name string
		c    call
		same bool
	}{
		{"same address, other port", call{peer: "192.0.2.1:2222"}, true},
		{"another address", call{peer: "192.0.2.2:1111"}, false},
		{"IPv4-mapped peer", call{peer: "[::ffff:192.0.2.1]:1111"}, true},
		{"untrusted peer's forwarded headers", call{peer: "192.0.2.1:1111", h: spoof}, true},
		{"untrusted peer's list", call{peer: "192.0.2.1:1111", h: hdr{"X-Forwarded-For": {"198.51.100.7, 203.0.113.3"}}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, byIP(1))
			want(t, r.do(call{peer: "192.0.2.1:1111"}), 0, "first")
			s := r.do(c.c)
			if s.pass == c.same {
				t.Errorf("second: pass %v (%q), want sharing the first's counter: %v", s.pass, s.detail(), c.same)
			}
			if c.same && !strings.HasPrefix(s.detail(), "192.0.2.1 exceeded") {
				t.Errorf("detail %q does not name the peer", s.detail())
			}
		})
	}
}

// trustedPolicy trusts 10.0.0.0/8 and 2001:db8:ffff::/48 as proxies
// writing the caller's address in header from, and counts 1 a minute per
// address.
func trustedPolicy(from policy.ForwardedHeader) policy.Policy {
	p := byIP(1)
	p.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48"),
		netip.MustParsePrefix("fe80::/10")}
	p.ForwardedHeader = from
	return p
}

// countedAs is a request from peer with h, and the address it is counted
// as.
type countedAs struct {
	name string
	peer string
	h    hdr
	want string
}

// checkCountedAs decides each case, which must be counted as its want
// (Verdict.Addr), and then a request straight from that address, which
// must share its counter (refused, Report.Counted naming the address).
func checkCountedAs(t *testing.T, p policy.Policy, cases []countedAs) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, p)
			s := r.do(call{peer: c.peer, h: c.h})
			want(t, s, 0, "proxied")
			if s.addr != netip.MustParseAddr(c.want) {
				t.Errorf("counted as %v, want %s", s.addr, c.want)
			}
			if s.rep.Counted != "" {
				t.Errorf("a pass with Counted %q", s.rep.Counted)
			}
			s = r.do(call{peer: netip.AddrPortFrom(netip.MustParseAddr(c.want), 9).String()})
			if s.pass || s.rep.Counted != shownAddr(c.want) {
				t.Errorf("straight from %s: pass %v, counted %q; want it refused on the same counter", c.want, s.pass, s.rep.Counted)
			}
		})
	}
}

// shownAddr is how a 429 names an address an ip rule counted: an IPv6
// one as its /64 (the default ipv6_prefix).
func shownAddr(s string) string {
	if a := netip.MustParseAddr(s); a.Is6() {
		return netip.PrefixFrom(a, 64).Masked().String()
	}
	return s
}

// By default a trusted proxy's callers are read from X-Forwarded-For only,
// the right-most address that is no trusted proxy.
func TestIdentifyBehindTrustedProxies(t *testing.T) {
	checkCountedAs(t, trustedPolicy(policy.XForwardedFor), []countedAs{
		{"XFF from a trusted proxy", "10.0.0.1:1", hdr{"X-Forwarded-For": {"203.0.113.9"}}, "203.0.113.9"},
		{"right-most untrusted XFF", "10.0.0.1:1", hdr{"X-Forwarded-For": {"198.51.100.1, 203.0.113.9, 10.0.0.7"}}, "203.0.113.9"},
		{"XFF over several lines", "10.0.0.1:1", hdr{"X-Forwarded-For": {"198.51.100.1", "203.0.113.9", "10.0.0.7"}}, "203.0.113.9"},
		{"XFF with a port", "10.0.0.1:1", hdr{"X-Forwarded-For": {"203.0.113.9:4711"}}, "203.0.113.9"},
		{"forged Forwarded ignored", "10.0.0.1:1", hdr{"Forwarded": {"for=198.51.100.1"}, "X-Forwarded-For": {"203.0.113.9"}}, "203.0.113.9"},
		{"Forwarded alone ignored", "10.0.0.1:1", hdr{"Forwarded": {"for=198.51.100.1"}}, "10.0.0.1"},
		{"no header: the proxy", "10.0.0.1:1", nil, "10.0.0.1"},
		{"an unreadable hop: the proxy that sent it", "10.0.0.1:1", hdr{"X-Forwarded-For": {"203.0.113.9, unknown"}}, "10.0.0.1"},
		{"every hop trusted: the left-most", "10.0.0.1:1", hdr{"X-Forwarded-For": {"10.0.0.3, 10.0.0.2"}}, "10.0.0.3"},
		{"IPv6 proxy", "[2001:db8:ffff::1]:1", hdr{"X-Forwarded-For": {"2001:db8:1::9"}}, "2001:db8:1::9"},
		{"IPv4-mapped proxy", "[::ffff:10.0.0.1]:1", hdr{"X-Forwarded-For": {"203.0.113.9"}}, "203.0.113.9"},
		{"IPv4-mapped hop", "10.0.0.1:1", hdr{"X-Forwarded-For": {"::ffff:203.0.113.9"}}, "203.0.113.9"},
		{"a proxy's zone", "[fe80::1%eth0]:1", hdr{"X-Forwarded-For": {"203.0.113.9"}}, "203.0.113.9"},
		{"a hop's zone", "[fe80::1]:1", hdr{"X-Forwarded-For": {"203.0.113.9, [fe80::2%eth0]:80"}}, "203.0.113.9"},
	})
}

// With forwarded_header: forwarded, the reverse: Forwarded only.
func TestIdentifyBehindTrustedProxiesWritingForwarded(t *testing.T) {
	checkCountedAs(t, trustedPolicy(policy.Forwarded), []countedAs{
		{"Forwarded", "10.0.0.1:1", hdr{"Forwarded": {`for=198.51.100.1, for=203.0.113.9;proto=https, for=10.0.0.7`}}, "203.0.113.9"},
		{"Forwarded over several lines", "10.0.0.1:1", hdr{"Forwarded": {"for=198.51.100.1", "for=203.0.113.9", "for=10.0.0.7"}}, "203.0.113.9"},
		{"quoted IPv6 with port", "10.0.0.1:1", hdr{"Forwarded": {`For="[2001:db8:1::9]:4711"`}}, "2001:db8:1::9"},
		{"forged XFF ignored", "10.0.0.1:1", hdr{"Forwarded": {"for=203.0.113.9"}, "X-Forwarded-For": {"198.51.100.1"}}, "203.0.113.9"},
		{"XFF alone ignored", "10.0.0.1:1", hdr{"X-Forwarded-For": {"198.51.100.1"}}, "10.0.0.1"},
		{"without for: the proxy", "10.0.0.1:1", hdr{"Forwarded": {"proto=https;by=10.0.0.1"}, "X-Forwarded-For": {"198.51.100.1"}}, "10.0.0.1"},
		{"every hop trusted: the left-most", "10.0.0.1:1", hdr{"Forwarded": {"for=10.0.0.3, for=10.0.0.2"}}, "10.0.0.3"},
		{"IPv6 proxy", "[2001:db8:ffff::1]:1", hdr{"Forwarded": {`for="[2001:db8:1::9]"`}}, "2001:db8:1::9"},
	})
}

// A client behind a trusted proxy stays on its own counter however it
// forges the header the proxy does not write, or the front of the one it
// does.
func TestIdentifyForgedHopsFromTrustedProxy(t *testing.T) {
	const client = "198.51.100.7"
	for _, m := range []struct {
		name    string
		from    policy.ForwardedHeader
		proxied func(forged string) hdr
	}{
		{"x-forwarded-for", policy.XForwardedFor, func(forged string) hdr {
			return hdr{"X-Forwarded-For": {forged + ", " + client}, "Forwarded": {"for=" + forged}}
		}},
		{"forwarded", policy.Forwarded, func(forged string) hdr {
			return hdr{"Forwarded": {"for=" + forged + ", for=" + client}, "X-Forwarded-For": {forged}}
		}},
	} {
		t.Run(m.name, func(t *testing.T) {
			r := newRig(t, trustedPolicy(m.from))
			want(t, r.do(call{peer: "10.0.0.1:1", h: m.proxied("192.0.2.200")}), 0, "first")
			for _, forged := range []string{"203.0.113.1", "203.0.113.2", "2001:db8:1::9"} {
				s := r.do(call{peer: "10.0.0.1:1", h: m.proxied(forged)})
				want(t, s, 429, "forged "+forged)
				if !strings.HasPrefix(s.detail(), client+" exceeded") || !s.addr.IsValid() || s.addr.String() != client {
					t.Errorf("forged %s: detail %q, addr %v; want the client %s", forged, s.detail(), s.addr, client)
				}
			}
		})
	}
}

// IPv6 callers are counted by their ipv6_prefix network (64 by default).
func TestIdentifyIPv6Grouped(t *testing.T) {
	for _, c := range []struct {
		prefix int
		a, b   string
		same   bool
	}{
		{0, "2001:db8:1:2::1", "2001:db8:1:2:ffff::9", true},
		{0, "2001:db8:1:2::1", "2001:db8:1:3::1", false},
		{64, "2001:db8:1:2::1", "2001:db8:1:2::2", true},
		{48, "2001:db8:1:2::1", "2001:db8:1:ffff::1", true},
		{48, "2001:db8:1:2::1", "2001:db8:2::1", false},
		{128, "2001:db8:1:2::1", "2001:db8:1:2::2", false},
		{128, "2001:db8:1:2::1", "2001:db8:1:2:0::1", true},
	} {
		p := byIP(1)
		p.IPv6Prefix = c.prefix
		r := newRig(t, p)
		want(t, r.do(call{peer: "[" + c.a + "]:1"}), 0, "first")
		if s := r.do(call{peer: "[" + c.b + "]:2"}); s.pass == c.same {
			t.Errorf("ipv6_prefix %d: %s then %s: pass %v, want sharing a counter %v", c.prefix, c.a, c.b, s.pass, c.same)
		}
	}
	r := newRig(t, byIP(2))
	want(t, r.do(call{peer: "[2001:db8:1:2::1]:1"}), 0, "first in the /64")
	want(t, r.do(call{peer: "[2001:db8:1:2::ffff]:1"}), 0, "second in the /64")
	if s := r.do(call{peer: "[2001:db8:1:2::7]:1"}); !strings.HasPrefix(s.detail(), "2001:db8:1:2::/64 exceeded 2 requests per 1m") {
		t.Errorf("detail %q, want it to name the /64", s.detail())
	}
	want(t, r.do(call{peer: "[2001:db8:1:3::1]:1"}), 0, "another /64")
}

// key: header:X-Tenant counts per value, wherever it comes from; leaving
// the header out shares one counter (missing_header: shared); key: global
// counts everyone together at the rule's rate.
func TestIdentifyHeaderAndGlobalKeys(t *testing.T) {
	tenant := policy.Policy{Rules: []policy.Rule{{Name: "per-tenant", Key: policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant"},
		Algorithm: limiter.FixedWindow, Rate: rate(2, time.Minute)}}}
	global := partners()
	global.Rules[0].Key = policy.KeySpec{Kind: policy.KeyGlobal}
	global.Clients.List = append(global.Clients.List, policy.Client{ID: "partner-d", Keys: []string{"key-d"}, Plan: "standard"})
	t1 := hdr{"X-Tenant": {"t1"}}
	for _, c := range []struct {
		name  string
		p     policy.Policy
		steps []struct {
			c      call
			status int
		}
	}{
		{"header", tenant, []struct {
			c      call
			status int
		}{
			{call{h: t1}, 0},
			{call{h: t1, peer: "198.51.100.1:1"}, 0},
			{call{h: t1}, 429},
			{call{h: hdr{"X-Tenant": {"t2"}}}, 0},
			{call{}, 0},
			{call{peer: "198.51.100.1:1"}, 0},
			{call{peer: "198.51.100.2:1"}, 429},
		}},
		{"global", global, []struct {
			c      call
			status int
		}{
			{call{key: "key-a", peer: "192.0.2.1:1"}, 0},
			{call{key: "key-d", peer: "192.0.2.2:1"}, 0},
			{call{key: "key-a", peer: "192.0.2.3:1"}, 0},
			{call{key: "key-d", peer: "192.0.2.4:1"}, 429},
			{call{key: "key-a", peer: "192.0.2.5:1"}, 429},
		}},
	} {
		r := newRig(t, c.p)
		for i, s := range c.steps {
			want(t, r.do(s.c), s.status, fmt.Sprintf("%s step %d", c.name, i))
		}
	}
}
