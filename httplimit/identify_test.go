package httplimit_test

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// TestNewNeedsPolicy: a policy is required; a store is not
// (TestNewWithoutStore).
func TestNewNeedsPolicy(t *testing.T) {
	h := newHarness(t, partners())
	if _, err := httplimit.New(httplimit.Options{Store: h.store}); err == nil {
		t.Error("New without a policy: no error")
	}
}

func TestKnownKeyIdentifiesClient(t *testing.T) {
	h := newHarness(t, partners())
	w := h.do(req{key: "key-a", header: http.Header{"X-Sluice-Client": {"partner-b", "admin"}}})
	wantStatus(t, w, http.StatusOK, "key-a")
	if got := h.lastClient(); !slices.Equal(got, []string{"partner-a"}) {
		t.Errorf("handler saw X-Sluice-Client %q, want [partner-a] (the caller's copy removed)", got)
	}
	if rep := h.lastReport(); rep.Client != "partner-a" || rep.Status != 0 {
		t.Errorf("report Client %q Status %d, want partner-a 0", rep.Client, rep.Status)
	}
	if w.Header().Get(httplimit.ClientHeader) != "" {
		t.Errorf("the response carries %s", httplimit.ClientHeader)
	}
}

// An unknown, missing or unusable key with unknown: reject is answered 401
// before anything is counted or forwarded.
func TestUnknownKeyRejected(t *testing.T) {
	long := strings.Repeat("k", 64<<10)
	cases := []struct {
		name string
		keys []string // X-API-Key field lines
	}{
		{"missing", nil},
		{"unknown", []string{"key-z"}},
		{"empty", []string{""}},
		{"blank", []string{" "}},
		{"other case", []string{"KEY-A"}},
		{"padded", []string{"key-a "}},
		{"NUL", []string{"key-a\x00"}},
		{"newline", []string{"key-a\r\nX-Sluice-Client: partner-a"}},
		{"DEL", []string{"key\x7f-a"}},
		{"non-ASCII", []string{"kéy-a"}},
		{"64 KiB", []string{long}},
		{"a key with 64 KiB appended", []string{"key-a" + long}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, partners())
			hdr := http.Header{"X-Sluice-Client": {"partner-a"}}
			if c.keys != nil {
				hdr["X-Api-Key"] = c.keys
			}
			w := h.do(req{header: hdr})
			p := readProblem(t, w, http.StatusUnauthorized)
			if !strings.Contains(p.Detail, "X-API-Key") {
				t.Errorf("detail %q does not name the key header", p.Detail)
			}
			for _, k := range c.keys {
				if k != "" && strings.TrimSpace(k) != "" && strings.Contains(w.Body.String(), k) {
					t.Errorf("the body repeats the key %q", k)
				}
			}
			if n := h.servedCount(); n != 0 {
				t.Errorf("handler called %d times", n)
			}
			if calls, _ := h.store.stats(); calls != 0 {
				t.Errorf("store called %d times, want 0 (nothing counted)", calls)
			}
			if w.Header().Get("Ratelimit") != "" || w.Header().Get("Retry-After") != "" {
				t.Errorf("401 carries rate-limit headers: %v", w.Header())
			}
			rep := h.lastReport()
			if rep.Client != httplimit.UnknownClient || rep.Status != http.StatusUnauthorized || len(rep.Rules) != 0 {
				t.Errorf("report %+v, want Client unknown, Status 401, no rules", rep.Report)
			}
			if len(rep.clientHeader) != 0 {
				t.Errorf("rejected request still carries the caller's X-Sluice-Client %q", rep.clientHeader)
			}
		})
	}
}

// A 401 does not depend on whether a rule matches: the key is checked first.
func TestUnknownKeyRejectedOnUnlimitedPath(t *testing.T) {
	h := newHarness(t, partners())
	readProblem(t, h.get("/health", ""), http.StatusUnauthorized)
	wantStatus(t, h.get("/health", "key-a"), http.StatusOK, "known key, no rule")
	if calls, _ := h.store.stats(); calls != 0 {
		t.Errorf("store called %d times for a path no rule matches", calls)
	}
	if rep := h.lastReport(); rep.Client != "partner-a" || len(rep.Rules) != 0 {
		t.Errorf("report %+v, want partner-a with no rules", rep.Report)
	}
}

func TestCustomKeyHeader(t *testing.T) {
	p := partners()
	p.Clients.KeyHeader = "Authorization-Key"
	h := newHarness(t, p)
	p401 := readProblem(t, h.do(req{key: "key-a"}), http.StatusUnauthorized) // X-API-Key is not the header any more
	if !strings.Contains(p401.Detail, "Authorization-Key") {
		t.Errorf("detail %q does not name Authorization-Key", p401.Detail)
	}
	wantStatus(t, h.do(req{header: http.Header{"Authorization-Key": {"key-b"}}}), http.StatusOK, "custom header")
	if got := h.lastClient(); !slices.Equal(got, []string{"partner-b"}) {
		t.Errorf("X-Sluice-Client %q, want partner-b", got)
	}
}

// anonymousPolicy admits unknown callers, counted by IP under plan
// anonymous (1/m) while known clients count by id at 3/m.
func anonymousPolicy() policy.Policy {
	p := partners()
	p.Clients.Unknown = policy.UnknownAnonymous
	p.Plans["anonymous"] = policy.Plan{Limits: map[string]policy.Rate{"claims": rate(1, time.Minute)}}
	return p
}

func TestUnknownCallersCountedAsAnonymousByIP(t *testing.T) {
	h := newHarness(t, anonymousPolicy())
	steps := []struct {
		name   string
		q      req
		status int
	}{
		{"no key, first from .1", req{remote: "192.0.2.1:1000"}, 200},
		{"unknown key from .1: same counter", req{remote: "192.0.2.1:2000", key: "nope"}, 429},
		{"respelled key from .1: unknown", req{remote: "192.0.2.1:3000", header: http.Header{"X_api_key": {"key-a"}}}, 429},
		{"no key from .2: its own counter", req{remote: "192.0.2.2:1000"}, 200},
		{"no key from .2 again", req{remote: "192.0.2.2:1000"}, 429},
		{"partner-a from .1: counted by id", req{remote: "192.0.2.1:1000", key: "key-a"}, 200},
	}
	for _, s := range steps {
		q := s.q
		q.header = http.Header{"X-Sluice-Client": {"partner-b"}}
		for k, v := range s.q.header {
			q.header[k] = v
		}
		w := h.do(q)
		wantStatus(t, w, s.status, s.name)
		rep := h.lastReport()
		wantLabel := "anonymous"
		if s.q.key == "key-a" {
			wantLabel = "partner-a"
		}
		if rep.Client != wantLabel {
			t.Errorf("%s: report Client %q, want %q", s.name, rep.Client, wantLabel)
		}
		if s.status == 429 {
			if p := readProblem(t, w, 429); !strings.HasPrefix(p.Detail, "192.0.2.") || !strings.Contains(p.Detail, "exceeded 1 request per 1m") {
				t.Errorf("%s: detail %q, want the caller's address and the anonymous plan's 1/m", s.name, p.Detail)
			}
			continue
		}
		if got := h.lastClient(); !slices.Equal(got, []string{wantLabel}) {
			t.Errorf("%s: X-Sluice-Client %q, want [%s]", s.name, got, wantLabel)
		}
	}
}

// With unknown: anonymous, "all callers are unknown" (no client listed yet)
// is still the anonymous plan, not the rule's own rate.
func TestAnonymousPlanAppliesWithoutListedClients(t *testing.T) {
	p := anonymousPolicy()
	p.Clients.List = nil
	h := newHarness(t, p)
	wantStatus(t, h.do(req{}), http.StatusOK, "first anonymous request")
	if got := h.lastClient(); !slices.Equal(got, []string{"anonymous"}) {
		t.Errorf("X-Sluice-Client %q, want [anonymous]", got)
	}
	if rep := h.lastReport(); rep.Client != "anonymous" {
		t.Errorf("report Client %q, want anonymous", rep.Client)
	}
	wantStatus(t, h.do(req{}), http.StatusTooManyRequests, "second anonymous request (plan anonymous: 1/m)")
}

// Without clients nobody is identified by key: any key header is ignored,
// X-Sluice-Client is removed and not set, and the report says "-".
func TestNoClientsIdentifiesNobody(t *testing.T) {
	h := newHarness(t, byIP(10))
	w := h.do(req{key: "key-a", header: http.Header{"X-Sluice-Client": {"partner-a"}}})
	wantStatus(t, w, http.StatusOK, "no clients")
	if got := h.lastClient(); len(got) != 0 {
		t.Errorf("X-Sluice-Client %q, want none", got)
	}
	if rep := h.lastReport(); rep.Client != "-" {
		t.Errorf("report Client %q, want -", rep.Client)
	}
}

// Counting by IP: the peer address, unless the peer is a trusted proxy.
func TestKeyIPUsesPeerAddress(t *testing.T) {
	h := newHarness(t, byIP(1000))
	a := h.keyOf(req{remote: "192.0.2.1:1111"})
	if b := h.keyOf(req{remote: "192.0.2.1:2222"}); b != a {
		t.Errorf("same address, other port: key %q, want %q", b, a)
	}
	if b := h.keyOf(req{remote: "192.0.2.2:1111"}); b == a {
		t.Errorf("another address shares key %q", a)
	}
	if b := h.keyOf(req{remote: "[::ffff:192.0.2.1]:1111"}); b != a {
		t.Errorf("IPv4-mapped IPv6 peer: key %q, want the IPv4 key %q", b, a)
	}
	spoof := http.Header{"X-Forwarded-For": {"203.0.113.9"}, "Forwarded": {"for=203.0.113.9"}}
	if b := h.keyOf(req{remote: "192.0.2.1:1111", header: spoof}); b != a {
		t.Errorf("untrusted peer's X-Forwarded-For believed: key %q, want the peer's %q", b, a)
	}
}

func TestKeyIPSpoofedForwardedIgnoredFromUntrustedPeer(t *testing.T) {
	h := newHarness(t, byIP(1))
	wantStatus(t, h.do(req{remote: "192.0.2.1:1"}), http.StatusOK, "first")
	for i, v := range []string{"203.0.113.1", "203.0.113.2", "198.51.100.7, 203.0.113.3"} {
		w := h.do(req{remote: "192.0.2.1:1", header: http.Header{"X-Forwarded-For": {v}, "Forwarded": {"for=" + v}}})
		wantStatus(t, w, http.StatusTooManyRequests, "spoof "+v)
		if i == 0 && !strings.HasPrefix(readProblem(t, w, 429).Detail, "192.0.2.1 exceeded") {
			t.Error("detail does not name the peer")
		}
	}
}

// trustedPolicy trusts 10.0.0.0/8 and 2001:db8:ffff::/48 as proxies that
// write the caller's address in header from.
func trustedPolicy(from policy.ForwardedHeader) policy.Policy {
	p := byIP(1000)
	p.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48")}
	p.ForwardedHeader = from
	return p
}

// countedAs is a request from remote with header, and the address it must
// be counted as.
type countedAs struct {
	name   string
	remote string
	header http.Header
	want   string
}

func checkCountedAs(t *testing.T, p policy.Policy, cases []countedAs) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, p)
			got := h.keyOf(req{remote: c.remote, header: c.header})
			want := h.keyOf(req{remote: netip.AddrPortFrom(netip.MustParseAddr(c.want), 9).String()})
			if got != want {
				t.Errorf("counted under %q, want as %s (%q)", got, c.want, want)
			}
		})
	}
}

// By default a trusted proxy's callers are read from X-Forwarded-For only:
// proxies that append to it pass a client's own Forwarded on untouched.
func TestKeyIPBehindTrustedProxies(t *testing.T) {
	checkCountedAs(t, trustedPolicy(policy.XForwardedFor), []countedAs{
		{"XFF from a trusted proxy", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"203.0.113.9"}}, "203.0.113.9"},
		{"right-most untrusted XFF", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"198.51.100.1, 203.0.113.9, 10.0.0.7"}}, "203.0.113.9"},
		{"XFF over several lines", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"198.51.100.1", "203.0.113.9", "10.0.0.7"}}, "203.0.113.9"},
		{"XFF with a port", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"203.0.113.9:4711"}}, "203.0.113.9"},
		{"forged Forwarded ignored", "10.0.0.1:1", http.Header{"Forwarded": {"for=198.51.100.1"}, "X-Forwarded-For": {"203.0.113.9"}}, "203.0.113.9"},
		{"Forwarded alone ignored", "10.0.0.1:1", http.Header{"Forwarded": {"for=198.51.100.1"}}, "10.0.0.1"},
		{"no header: the proxy", "10.0.0.1:1", nil, "10.0.0.1"},
		{"every hop trusted: the left-most", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"10.0.0.3, 10.0.0.2"}}, "10.0.0.3"},
		{"IPv6 proxy", "[2001:db8:ffff::1]:1", http.Header{"X-Forwarded-For": {"2001:db8:1::9"}}, "2001:db8:1::9"},
		{"IPv4-mapped proxy", "[::ffff:10.0.0.1]:1", http.Header{"X-Forwarded-For": {"203.0.113.9"}}, "203.0.113.9"},
		{"IPv4-mapped hop", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"::ffff:203.0.113.9"}}, "203.0.113.9"},
	})
}

// With forwarded_header: forwarded, the reverse: Forwarded only.
func TestKeyIPBehindTrustedProxiesWritingForwarded(t *testing.T) {
	checkCountedAs(t, trustedPolicy(policy.Forwarded), []countedAs{
		{"Forwarded", "10.0.0.1:1", http.Header{"Forwarded": {`for=198.51.100.1, for=203.0.113.9;proto=https, for=10.0.0.7`}}, "203.0.113.9"},
		{"Forwarded over several lines", "10.0.0.1:1", http.Header{"Forwarded": {"for=198.51.100.1", "for=203.0.113.9", "for=10.0.0.7"}}, "203.0.113.9"},
		{"Forwarded quoted IPv6 with port", "10.0.0.1:1", http.Header{"Forwarded": {`For="[2001:db8:1::9]:4711"`}}, "2001:db8:1::9"},
		{"forged XFF ignored", "10.0.0.1:1", http.Header{"Forwarded": {"for=203.0.113.9"}, "X-Forwarded-For": {"198.51.100.1"}}, "203.0.113.9"},
		{"XFF alone ignored", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"198.51.100.1"}}, "10.0.0.1"},
		{"Forwarded without for: the proxy", "10.0.0.1:1", http.Header{"Forwarded": {"proto=https;by=10.0.0.1"}, "X-Forwarded-For": {"198.51.100.1"}}, "10.0.0.1"},
		{"every hop trusted: the left-most", "10.0.0.1:1", http.Header{"Forwarded": {"for=10.0.0.3, for=10.0.0.2"}}, "10.0.0.3"},
		{"IPv6 proxy", "[2001:db8:ffff::1]:1", http.Header{"Forwarded": {`for="[2001:db8:1::9]"`}}, "2001:db8:1::9"},
	})
}

// A client behind a trusted proxy writes whatever it likes in both headers;
// the proxy appends the client's real address to the one it writes. The
// client must stay on its own counter however it forges the other header.
func TestKeyIPForgedOtherHeaderFromTrustedProxy(t *testing.T) {
	const client = "198.51.100.7"
	for _, m := range []struct {
		name    string
		from    policy.ForwardedHeader
		proxied func(forged string) http.Header
	}{
		{"x-forwarded-for", policy.XForwardedFor, func(forged string) http.Header {
			return http.Header{"X-Forwarded-For": {forged + ", " + client}, "Forwarded": {"for=" + forged}}
		}},
		{"forwarded", policy.Forwarded, func(forged string) http.Header {
			return http.Header{"Forwarded": {"for=" + forged + ", for=" + client}, "X-Forwarded-For": {forged}}
		}},
	} {
		t.Run(m.name, func(t *testing.T) {
			p := trustedPolicy(m.from)
			p.Rules[0].Rate.N = 1
			h := newHarness(t, p)
			wantStatus(t, h.do(req{remote: "10.0.0.1:1", header: m.proxied("192.0.2.200")}), http.StatusOK, "first")
			for i, forged := range []string{"203.0.113.1", "203.0.113.2", "2001:db8:1::9"} {
				w := h.do(req{remote: "10.0.0.1:1", header: m.proxied(forged)})
				wantStatus(t, w, http.StatusTooManyRequests, "forged "+forged)
				if i == 0 && !strings.HasPrefix(readProblem(t, w, 429).Detail, client+" exceeded") {
					t.Errorf("detail does not name the client %s", client)
				}
			}
		})
	}
}

// A link-local proxy's peer address carries a zone ("fe80::1%eth0"), as
// net/http writes RemoteAddr; the zone must not make it untrusted.
func TestKeyIPTrustedProxyWithZone(t *testing.T) {
	p := byIP(1000)
	p.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("fe80::/10")}
	h := newHarness(t, p)
	want := h.keyOf(req{remote: "203.0.113.9:1"})
	for _, c := range []struct{ remote, xff string }{
		{"[fe80::1%eth0]:1", "203.0.113.9"},
		{"[fe80::1]:1", "203.0.113.9, [fe80::2%eth0]:80"},
	} {
		got := h.keyOf(req{remote: c.remote, header: http.Header{"X-Forwarded-For": {c.xff}}})
		if got != want {
			t.Errorf("peer %s, X-Forwarded-For %q: counted under %q, want as 203.0.113.9 (%q)", c.remote, c.xff, got, want)
		}
	}
}

func TestKeyIPv6GroupedByPrefix(t *testing.T) {
	cases := []struct {
		prefix int
		a, b   string
		same   bool
	}{
		{0, "2001:db8:1:2::1", "2001:db8:1:2:ffff::9", true},
		{0, "2001:db8:1:2::1", "2001:db8:1:3::1", false},
		{64, "2001:db8:1:2::1", "2001:db8:1:2::2", true},
		{48, "2001:db8:1:2::1", "2001:db8:1:ffff::1", true},
		{128, "2001:db8:1:2::1", "2001:db8:1:2::2", false},
		{128, "2001:db8:1:2::1", "2001:db8:1:2:0::1", true},
	}
	for _, c := range cases {
		p := byIP(1000)
		p.IPv6Prefix = c.prefix
		h := newHarness(t, p)
		ka := h.keyOf(req{remote: "[" + c.a + "]:1"})
		kb := h.keyOf(req{remote: "[" + c.b + "]:2"})
		if (ka == kb) != c.same {
			t.Errorf("IPv6Prefix %d: %s and %s share a counter: %v, want %v (%q, %q)", c.prefix, c.a, c.b, ka == kb, c.same, ka, kb)
		}
	}
}

func TestKeyIPv6SharedLimit(t *testing.T) {
	h := newHarness(t, byIP(2))
	wantStatus(t, h.do(req{remote: "[2001:db8:1:2::1]:1"}), 200, "first in the /64")
	wantStatus(t, h.do(req{remote: "[2001:db8:1:2::ffff]:1"}), 200, "second in the /64")
	w := h.do(req{remote: "[2001:db8:1:2::7]:1"})
	if p := readProblem(t, w, 429); !strings.HasPrefix(p.Detail, "2001:db8:1:2::/64 exceeded 2 requests per 1m") {
		t.Errorf("detail %q, want it to name the /64", p.Detail)
	}
	wantStatus(t, h.do(req{remote: "[2001:db8:1:3::1]:1"}), 200, "another /64")
}

func TestKeyHeader(t *testing.T) {
	p := policy.Policy{Rules: []policy.Rule{{
		Name: "per-tenant", Key: policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant"},
		Algorithm: limiter.FixedWindow, Rate: rate(2, time.Minute),
	}}}
	h := newHarness(t, p)
	t1 := http.Header{"X-Tenant": {"t1"}}
	steps := []struct {
		name   string
		q      req
		status int
	}{
		{"t1 #1", req{header: t1}, 200},
		{"t1 #2 from elsewhere", req{header: t1, remote: "198.51.100.1:1"}, 200},
		{"t1 #3", req{header: t1}, 429},
		{"t2 #1", req{header: http.Header{"X-Tenant": {"t2"}}}, 200},
		{"none #1", req{}, 200},
		{"none #2 from elsewhere", req{remote: "198.51.100.1:1"}, 200},
		{"none #3: leaving it out shares one counter", req{remote: "198.51.100.2:1"}, 429},
	}
	for _, s := range steps {
		wantStatus(t, h.do(s.q), s.status, s.name)
	}
}

func TestKeyGlobal(t *testing.T) {
	p := partners()
	p.Rules[0].Key = policy.KeySpec{Kind: policy.KeyGlobal}
	p.Clients.List = append(p.Clients.List, policy.Client{ID: "partner-d", Keys: []string{"key-d"}, Plan: "standard"})
	h := newHarness(t, p)
	steps := []struct {
		key, remote string
		status      int
	}{
		{"key-a", "192.0.2.1:1", 200},
		{"key-d", "192.0.2.2:1", 200},
		{"key-a", "192.0.2.3:1", 200},
		{"key-d", "192.0.2.4:1", 429}, // 3/m for everyone at the rule's rate
		{"key-a", "192.0.2.5:1", 429},
	}
	for i, s := range steps {
		wantStatus(t, h.do(req{key: s.key, remote: s.remote}), s.status, fmt.Sprintf("step %d (%s)", i, s.key))
	}
}
