package policy_test

import (
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/policy"
)

func TestMatch(t *testing.T) {
	r := func(name, path string, methods ...string) policy.Rule {
		return policy.Rule{Name: name, Match: policy.Match{Path: path, Methods: methods}, Rate: rate(1, time.Second)}
	}
	c := mustCompile(t, policy.Policy{Rules: []policy.Rule{
		r("all", ""),
		r("root", "/"),
		r("claims", "/claims"),
		r("claims-slash", "/claims/"),
		r("post-claims", "/claims", "POST"),
		r("docs", "/docs", "GET"),
		r("deep", "/a/b", "PUT", "DELETE"),
	}})
	tests := []struct {
		method, path string
		want         []int
	}{
		{"GET", "/claims", []int{0, 1, 2, 3}},
		{"GET", "/claims/", []int{0, 1, 2, 3}},
		{"GET", "/claims/7", []int{0, 1, 2, 3}},
		{"GET", "/claims/7/notes", []int{0, 1, 2, 3}},
		{"GET", "/claimsx", []int{0, 1}},
		{"GET", "/claim", []int{0, 1}},
		{"GET", "/Claims", []int{0, 1}},
		{"POST", "/claims", []int{0, 1, 2, 3, 4}},
		{"POST", "/claims/7", []int{0, 1, 2, 3, 4}},
		{"POST", "/claimsx", []int{0, 1}},
		{"GET", "/docs", []int{0, 1, 5}},
		{"HEAD", "/docs/x", []int{0, 1, 5}},
		{"POST", "/docs", []int{0, 1}},
		{"OPTIONS", "/docs", []int{0, 1}},
		{"GET", "/", []int{0, 1}},
		{"GET", "/a", []int{0, 1}},
		{"PUT", "/a/b", []int{0, 1, 6}},
		{"DELETE", "/a/b/c", []int{0, 1, 6}},
		{"PUT", "/a/bc", []int{0, 1}},
		{"GET", "/a/b", []int{0, 1}},
		{"HEAD", "/a/b", []int{0, 1}},
	}
	for _, tt := range tests {
		if got := c.Match(tt.method, tt.path, nil); !slices.Equal(got, tt.want) {
			t.Errorf("Match(%s %s) = %v, want %v", tt.method, tt.path, got, tt.want)
		}
	}
}

func TestMatchAppends(t *testing.T) {
	c := mustCompile(t, base())
	dst := []int{99}
	if got := c.Match("POST", "/claims", dst); !slices.Equal(got, []int{99, 0, 1}) {
		t.Errorf("Match onto [99] = %v, want [99 0 1]", got)
	}
	buf := make([]int, 0, 4)
	got := c.Match("GET", "/claims", buf[:0])
	if !slices.Equal(got, []int{0}) || &got[:1][0] != &buf[:1][0] {
		t.Errorf("Match(GET /claims, buf[:0]) = %v, want [0] in buf", got)
	}
	if got := c.Match("GET", "/claims", nil); !slices.Equal(got, []int{0}) {
		t.Errorf("Match(GET /claims) = %v, want [0]", got)
	}
}

func TestExempt(t *testing.T) {
	p := base()
	p.Rules[0].Allow = []string{"acme"}
	p.Rules[0].AllowNets = []netip.Prefix{prefix("10.0.0.0/8"), prefix("2001:db8::/32"), prefix("fe80::/10"), prefix("192.0.2.7/32")}
	c := mustCompile(t, p)
	tests := []struct {
		id   string
		addr netip.Addr
		want bool
	}{
		{"acme", netip.Addr{}, true},
		{"acme", addr("203.0.113.1"), true},
		{"bolt", netip.Addr{}, false},
		{"bolt", addr("10.9.8.7"), true},
		{"", addr("10.1.2.3"), true},
		{"", addr("::ffff:10.1.2.3"), true}, // IPv4-mapped
		{"", addr("11.0.0.1"), false},
		{"", addr("192.0.2.7"), true},
		{"", addr("192.0.2.8"), false},
		{"", addr("::ffff:192.0.2.7"), true},
		{"", addr("2001:db8:ffff::1"), true},
		{"", addr("2001:db9::1"), false},
		{"", addr("fe80::1%eth0"), true}, // zoned
		{"", addr("fe80::1"), true},
		{"", addr("fec0::1%eth0"), false},
		{"", netip.Addr{}, false},
		{"ACME", netip.Addr{}, false}, // ids are case-sensitive
	}
	for _, tt := range tests {
		if got := c.Exempt(0, tt.id, tt.addr); got != tt.want {
			t.Errorf("Exempt(0, %q, %v) = %v, want %v", tt.id, tt.addr, got, tt.want)
		}
		if c.Exempt(1, tt.id, tt.addr) {
			t.Errorf("Exempt(1, %q, %v) = true for a rule without allow lists", tt.id, tt.addr)
		}
	}
}

func TestIPKey(t *testing.T) {
	tests := []struct {
		bits int
		addr netip.Addr
		want string
	}{
		{0, addr("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64"},
		{0, addr("2001:db8:1:2:ffff::9"), "2001:db8:1:2::/64"},
		{0, addr("2001:db8:1:3::1"), "2001:db8:1:3::/64"},
		{0, addr("fe80::1%eth0"), "fe80::/64"},
		{0, addr("10.1.2.3"), "10.1.2.3"},
		{0, addr("::ffff:10.1.2.3"), "10.1.2.3"},
		{0, addr("::1"), "::/64"},
		{0, netip.Addr{}, "invalid IP"},
		{64, addr("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64"},
		{128, addr("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2:3:4:5:6/128"},
		{128, addr("2001:db8:1:2:3:4:5:7"), "2001:db8:1:2:3:4:5:7/128"},
		{128, addr("10.1.2.3"), "10.1.2.3"},
		{48, addr("2001:db8:1:2:3:4:5:6"), "2001:db8:1::/48"},
		{48, addr("2001:db8:1:ffff::"), "2001:db8:1::/48"},
		{48, addr("::ffff:192.0.2.1"), "192.0.2.1"},
		{1, addr("8000::1"), "8000::/1"},
	}
	for _, tt := range tests {
		p := base()
		p.IPv6Prefix = tt.bits
		c := mustCompile(t, p)
		if got := c.IPKey(tt.addr); got != tt.want {
			t.Errorf("/%d: IPKey(%v) = %q, want %q", tt.bits, tt.addr, got, tt.want)
		}
	}
}

func TestTrustedProxy(t *testing.T) {
	p := base()
	if c := mustCompile(t, p); c.TrustedProxy(addr("127.0.0.1")) {
		t.Error("TrustedProxy(127.0.0.1) with no trusted proxies")
	}
	p.TrustedProxies = []netip.Prefix{prefix("127.0.0.1/32"), prefix("::1/128"), prefix("10.0.0.0/8")}
	c := mustCompile(t, p)
	for a, want := range map[string]bool{
		"127.0.0.1":        true,
		"::ffff:127.0.0.1": true,
		"::1":              true,
		"10.2.3.4":         true,
		"::ffff:10.2.3.4":  true,
		"127.0.0.2":        false,
		"192.168.0.1":      false,
		"::2":              false,
		"fe80::1%lo":       false,
	} {
		if got := c.TrustedProxy(addr(a)); got != want {
			t.Errorf("TrustedProxy(%s) = %v, want %v", a, got, want)
		}
	}
	if c.TrustedProxy(netip.Addr{}) {
		t.Error("TrustedProxy(invalid) = true")
	}
}

// The compiled policy reads callers from the one header it was given,
// X-Forwarded-For unless told otherwise.
func TestForwardedHeader(t *testing.T) {
	p := base()
	if got := mustCompile(t, p).ForwardedHeader(); got != policy.XForwardedFor {
		t.Errorf("default ForwardedHeader() = %v, want X-Forwarded-For", got)
	}
	p.ForwardedHeader = policy.Forwarded
	if got := mustCompile(t, p).ForwardedHeader(); got != policy.Forwarded {
		t.Errorf("ForwardedHeader() = %v, want Forwarded", got)
	}
	for h, want := range map[policy.ForwardedHeader]string{
		policy.XForwardedFor: "X-Forwarded-For",
		policy.Forwarded:     "Forwarded",
		7:                    "ForwardedHeader(7)",
	} {
		if got := h.String(); got != want {
			t.Errorf("ForwardedHeader(%d).String() = %q, want %q", uint8(h), got, want)
		}
	}
}

func TestCallerLookups(t *testing.T) {
	c := mustCompile(t, base())
	for key, id := range map[string]string{"k-acme": "acme", "k-bolt-1": "bolt", "k-bolt-2": "bolt", "k-corp": "corp"} {
		cl, ok := c.CallerByKey(key)
		if !ok || cl.ID != id {
			t.Errorf("CallerByKey(%q) = %v, %v; want %q", key, cl, ok, id)
			continue
		}
		if byID := callerByID(t, c, id); byID != cl {
			t.Errorf("CallerByKey(%q) and CallerByID(%q) are different callers", key, id)
		}
	}
	for _, key := range []string{"", "k-ACME", "k-acme ", "acme", "nope"} {
		if cl, ok := c.CallerByKey(key); ok || cl != nil {
			t.Errorf("CallerByKey(%q) = %v, %v; want nil, false", key, cl, ok)
		}
	}
	for _, id := range []string{"", "ACME", "k-acme", "nope"} {
		if cl, ok := c.CallerByID(id); ok || cl != nil {
			t.Errorf("CallerByID(%q) = %v, %v; want nil, false", id, cl, ok)
		}
	}
	if !c.IdentifiesByKey() || c.Unidentified() == nil || c.Anonymous() != nil {
		t.Error("with clients: want IdentifiesByKey, an Unidentified caller and no Anonymous one")
	}
}

func TestStrings(t *testing.T) {
	for r, want := range map[policy.Rate]string{
		rate(100, time.Second):           "100/s",
		rate(5, time.Minute):             "5/m",
		rate(7, time.Hour):               "7/h",
		rate(3, 24*time.Hour):            "3/d",
		rate(100, 30*time.Second):        "100/30s",
		rate(1, 90*time.Second):          "1/1m30s",
		rate(2, 500*time.Millisecond):    "2/500ms",
		rate(1, 48*time.Hour):            "1/48h",
		rate(5, 15*time.Minute):          "5/15m",
		rate(5, 90*time.Minute):          "5/1h30m",
		rate(3, 61*time.Second):          "3/1m1s",
		rate(3, 1500*time.Millisecond):   "3/1.5s",
		rate(1_000_000_000, time.Second): "1000000000/s",
		rate(0, 0):                       "0/0s",
	} {
		if got := r.String(); got != want {
			t.Errorf("Rate{%d, %v}.String() = %q, want %q", r.N, r.Period, got, want)
		}
	}
	for k, want := range map[policy.KeySpec]string{
		{}:                       "client",
		{Kind: policy.KeyClient}: "client",
		{Kind: policy.KeyIP}:     "ip",
		{Kind: policy.KeyHeader, Header: "X-Tenant"}: "header:X-Tenant",
		{Kind: policy.KeyGlobal}:                     "global",
	} {
		if got := k.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", k, got, want)
		}
	}
	if policy.Enforce.String() != "enforce" || policy.Shadow.String() != "shadow" {
		t.Errorf("Mode strings: %q, %q; want enforce, shadow", policy.Enforce, policy.Shadow)
	}
}

// TestConcurrentLookups runs every lookup from several goroutines; -race
// checks that a Compiled is safe for concurrent use.
func TestConcurrentLookups(t *testing.T) {
	p := base()
	p.TrustedProxies = []netip.Prefix{prefix("10.0.0.0/8")}
	p.Rules[0].AllowNets = []netip.Prefix{prefix("192.0.2.0/24")}
	c := mustCompile(t, p)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				cl, _ := c.CallerByKey("k-bolt-1")
				_ = cl.Limit(1).String() + cl.StateTag(0)
				_ = c.Match("POST", "/claims/1", nil)
				_ = c.Exempt(0, "bolt", addr("192.0.2.1"))
				_ = c.IPKey(addr("2001:db8::1"))
				_ = c.TrustedProxy(addr("10.0.0.1"))
			}
		})
	}
	wg.Wait()
}

// TestCompiledIsImmutable: a Compiled is documented as immutable, so
// changing the Policy value it was compiled from must not change it. Compile
// keeps the caller's slices (TrustedProxies, Match.Methods, AllowNets), so a
// program that reuses its Policy after Compile changes a running policy,
// without validation and racing with the requests that read it.
func TestCompiledIsImmutable(t *testing.T) {
	p := base()
	p.TrustedProxies = []netip.Prefix{prefix("10.0.0.0/8")}
	p.Rules[0].AllowNets = []netip.Prefix{prefix("192.0.2.0/24")}
	c := mustCompile(t, p)

	p.TrustedProxies[0] = prefix("172.16.0.0/12")
	p.Rules[0].AllowNets[0] = prefix("198.51.100.0/24")
	p.Rules[1].Match.Methods[0] = "get" // would not even compile

	if !c.TrustedProxy(addr("10.1.1.1")) || c.TrustedProxy(addr("172.16.0.1")) {
		t.Error("changing Policy.TrustedProxies after Compile changed Compiled.TrustedProxy")
	}
	if !c.Exempt(0, "", addr("192.0.2.1")) || c.Exempt(0, "", addr("198.51.100.1")) {
		t.Error("changing Rule.AllowNets after Compile changed Compiled.Exempt")
	}
	if got := c.Match("POST", "/claims", nil); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("changing Match.Methods after Compile: Match(POST /claims) = %v, want [0 1]", got)
	}
}

// TestMappedPrefixes: lookups see an IPv4-mapped IPv6 address as IPv4, so a
// network written in its IPv4-mapped form (::ffff:10.0.0.0/104) can never
// contain anything. Compile must either see it as the IPv4 network
// (10.0.0.0/8) or report it; it does neither, and the trusted proxy or the
// exemption silently never applies.
func TestMappedPrefixes(t *testing.T) {
	mapped := prefix("::ffff:10.0.0.0/104")
	p := base()
	p.TrustedProxies = []netip.Prefix{mapped}
	p.Rules[0].AllowNets = []netip.Prefix{mapped}
	c, err := policy.Compile(p)
	if err != nil {
		return // reported: fine
	}
	for _, a := range []netip.Addr{addr("10.1.2.3"), addr("::ffff:10.1.2.3")} {
		if !c.TrustedProxy(a) {
			t.Errorf("trusted proxies %v: TrustedProxy(%v) = false, and Compile reported nothing", mapped, a)
		}
		if !c.Exempt(0, "", a) {
			t.Errorf("allow nets %v: Exempt(0, \"\", %v) = false, and Compile reported nothing", mapped, a)
		}
	}
}

// TestHeaderNames: the key header's, each header rule's and each
// cost_header's name as an http.Header holds it, canonicalised once at
// Compile.
func TestHeaderNames(t *testing.T) {
	p := policy.Policy{Clients: policy.Clients{KeyHeader: "x-API-key", List: []policy.Client{{ID: "acme", Keys: []string{"k-acme"}}}}}
	p.Rules = []policy.Rule{
		{Name: "tenant", Key: policy.KeySpec{Kind: policy.KeyHeader, Header: "x_tenant-ID"}, Rate: policy.Rate{N: 1, Period: time.Second}},
		{Name: "per-ip", Key: policy.KeySpec{Kind: policy.KeyIP}, Rate: policy.Rate{N: 1, Period: time.Second}, CostHeader: "x-cost"},
	}
	c := mustCompile(t, p)
	if got0, got1 := c.CostHeaderName(0), c.CostHeaderName(1); got0 != "" || got1 != "X-Cost" {
		t.Errorf("CostHeaderName(0), (1) = %q, %q; want \"\", X-Cost", got0, got1)
	}
	if got := c.KeyName(); got != "X-Api-Key" {
		t.Errorf("KeyName() = %q, want X-Api-Key", got)
	}
	if got := c.HeaderName(0); got != "X_tenant-Id" {
		t.Errorf("HeaderName(0) = %q, want X_tenant-Id (textproto.CanonicalMIMEHeaderKey)", got)
	}
	if got := c.HeaderName(1); got != "" {
		t.Errorf("HeaderName(1) of an ip rule = %q, want \"\"", got)
	}
	p.Clients.List = nil
	if got := mustCompile(t, p).KeyName(); got != "" {
		t.Errorf("KeyName() without clients = %q, want \"\" (no caller is identified by key)", got)
	}
}
