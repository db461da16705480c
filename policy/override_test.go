package policy_test

import (
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// overridePolicy is base with more to override: a rule that only
// classifies, a concurrency rule, a rule of cost 5, a sliding_log rule,
// and bolt's own limit of api, so that every level of precedence is there.
func overridePolicy(t testing.TB) *policy.Compiled {
	t.Helper()
	p := base()
	p.Clients.Unknown = policy.UnknownAnonymous
	p.Clients.List[1].Limits["api"] = rate(500, time.Minute)
	p.Rules = append(p.Rules,
		policy.Rule{Name: "low", Match: policy.Match{Path: "/exports"}, Degrade: true},
		policy.Rule{Name: "inflight", Concurrency: 10},
		policy.Rule{Name: "bulk", Match: policy.Match{Path: "/bulk"}, Rate: rate(100, time.Minute), Cost: 5},
		policy.Rule{Name: "log", Algorithm: limiter.SlidingLog, Rate: rate(10, time.Minute)},
	)
	return mustCompile(t, p)
}

func perMinute(n int64) limiter.Limit {
	return limiter.MustNew(limiter.SlidingWindow, n, time.Minute, 0)
}

func clientOverride(id, rule string, r policy.Rate) policy.Override {
	return policy.Override{Client: id, Rule: rule, Rate: r}
}

func addrOverride(p, rule string, r policy.Rate) policy.Override {
	return policy.Override{Addr: prefix(p), Rule: rule, Rate: r}
}

// withOverrides applies ovs to c and fails the test on any error.
func withOverrides(t testing.TB, c *policy.Compiled, ovs ...policy.Override) *policy.Compiled {
	t.Helper()
	out, errs := c.WithOverrides(ovs)
	for _, e := range errs {
		t.Fatalf("overrides[%d]: %v", e.Index, e.Err)
	}
	return out
}

// TestOverridePrecedence: for one rule and one caller, an override of the
// client beats an override of the longest range holding the caller's
// address, which beats the client's own limit, its plan's and the rule's.
func TestOverridePrecedence(t *testing.T) {
	c := overridePolicy(t)
	const api = 0
	v4, v4b, other := addr("203.0.113.7"), addr("203.0.5.5"), addr("198.51.100.1")
	tests := []struct {
		name   string
		ovs    []policy.Override
		caller string // a client id, or "" for the anonymous caller
		at     netip.Addr
		want   limiter.Limit
		source string
	}{
		{"the rule's", nil, "corp", v4, ruleAPI, ""},
		{"the plan's", nil, "acme", v4, largeAPI, "plan:large"},
		{"the client's own", nil, "bolt", v4, perMinute(500), "client:bolt"},
		{"address beats the client's own", []policy.Override{addrOverride("203.0.113.0/24", "api", rate(50, time.Minute))},
			"bolt", v4, perMinute(50), "override:ip:203.0.113.0/24"},
		{"address beats the plan", []policy.Override{addrOverride("203.0.113.0/24", "api", rate(50, time.Minute))},
			"acme", v4, perMinute(50), "override:ip:203.0.113.0/24"},
		{"address beats the anonymous caller's", []policy.Override{addrOverride("203.0.113.0/24", "api", rate(50, time.Minute))},
			"", v4, perMinute(50), "override:ip:203.0.113.0/24"},
		{"outside the range", []policy.Override{addrOverride("203.0.113.0/24", "api", rate(50, time.Minute))},
			"bolt", other, perMinute(500), "client:bolt"},
		{"unknown address", []policy.Override{addrOverride("0.0.0.0/0", "api", rate(50, time.Minute))},
			"bolt", netip.Addr{}, perMinute(500), "client:bolt"},
		{"client override beats address", []policy.Override{
			addrOverride("203.0.113.0/24", "api", rate(50, time.Minute)), clientOverride("bolt", "api", rate(7, time.Minute))},
			"bolt", v4, perMinute(7), "override:bolt"},
		{"client override beats address, in either order", []policy.Override{
			clientOverride("bolt", "api", rate(7, time.Minute)), addrOverride("203.0.113.0/24", "api", rate(50, time.Minute))},
			"bolt", v4, perMinute(7), "override:bolt"},
		{"another client's override", []policy.Override{clientOverride("acme", "api", rate(7, time.Minute))},
			"bolt", v4, perMinute(500), "client:bolt"},
		{"longest range wins", []policy.Override{
			addrOverride("203.0.0.0/16", "api", rate(20, time.Minute)), addrOverride("203.0.113.0/24", "api", rate(50, time.Minute)),
			addrOverride("203.0.113.7/32", "claims", rate(1, time.Second))},
			"corp", v4, perMinute(50), "override:ip:203.0.113.0/24"},
		{"the shorter range elsewhere", []policy.Override{
			addrOverride("203.0.0.0/16", "api", rate(20, time.Minute)), addrOverride("203.0.113.0/24", "api", rate(50, time.Minute))},
			"corp", v4b, perMinute(20), "override:ip:203.0.0.0/16"},
		{"the longest range of the rule", []policy.Override{
			addrOverride("203.0.0.0/16", "api", rate(20, time.Minute)), addrOverride("203.0.113.0/24", "claims", rate(1, time.Second))},
			"corp", v4, perMinute(20), "override:ip:203.0.0.0/16"},
		{"IPv4-mapped address", []policy.Override{addrOverride("203.0.113.0/24", "api", rate(50, time.Minute))},
			"corp", addr("::ffff:203.0.113.7"), perMinute(50), "override:ip:203.0.113.0/24"},
		{"IPv4-mapped range", []policy.Override{addrOverride("::ffff:203.0.113.0/120", "api", rate(50, time.Minute))},
			"corp", v4, perMinute(50), "override:ip:203.0.113.0/24"},
		{"IPv6 range", []policy.Override{addrOverride("2001:db8::/48", "api", rate(30, time.Minute))},
			"corp", addr("2001:db8:0:1::5"), perMinute(30), "override:ip:2001:db8::/48"},
		{"IPv6 longest range", []policy.Override{
			addrOverride("2001:db8::/32", "api", rate(30, time.Minute)), addrOverride("2001:db8:0:1::/64", "api", rate(3, time.Minute))},
			"corp", addr("2001:db8:0:1::5"), perMinute(3), "override:ip:2001:db8:0:1::/64"},
		{"IPv6 outside", []policy.Override{addrOverride("2001:db8::/48", "api", rate(30, time.Minute))},
			"corp", addr("2001:db8:1::1"), ruleAPI, ""},
		{"an IPv4 range holds no IPv6 address", []policy.Override{addrOverride("0.0.0.0/0", "api", rate(30, time.Minute))},
			"corp", addr("2001:db8::1"), ruleAPI, ""},
		{"an IPv6 range holds no IPv4 address", []policy.Override{addrOverride("::/0", "api", rate(30, time.Minute))},
			"corp", v4, ruleAPI, ""},
		{"a zoned address", []policy.Override{addrOverride("fe80::/64", "api", rate(30, time.Minute))},
			"corp", addr("fe80::1%eth0"), perMinute(30), "override:ip:fe80::/64"},
		{"the later of two for one target and rule", []policy.Override{
			clientOverride("corp", "api", rate(7, time.Minute)), clientOverride("corp", "api", rate(8, time.Minute))},
			"corp", v4, perMinute(8), "override:corp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := withOverrides(t, c, tt.ovs...)
			cl := o.Anonymous()
			if tt.caller != "" {
				cl = callerByID(t, o, tt.caller)
			}
			l, src := o.LimitAt(cl, api, tt.at)
			if l != tt.want || src != tt.source {
				t.Errorf("LimitAt = %v from %q, want %v from %q", l, src, tt.want, tt.source)
			}
		})
	}
}

// TestClientOverride: the client's caller, by id and by every key, has the
// override's limit and source; its LimitSource, which keys use, and the
// other rules are the file's.
func TestClientOverride(t *testing.T) {
	c := overridePolicy(t)
	o := withOverrides(t, c, clientOverride("bolt", "claims", rate(2, time.Second)))
	byID := callerByID(t, o, "bolt")
	for _, k := range []string{"k-bolt-1", "k-bolt-2"} {
		if cl, ok := o.CallerByKey(k); !ok || cl != byID {
			t.Errorf("CallerByKey(%q) = %p, want CallerByID's %p", k, cl, byID)
		}
	}
	// 2/s scales the rule's burst of 20 at 10/s to 4.
	if want := limiter.MustNew(limiter.TokenBucket, 2, time.Second, 4); byID.Limit(1) != want {
		t.Errorf("Limit(claims) = %v, want %v", byID.Limit(1), want)
	}
	if byID.Source(1) != "override:bolt" || byID.LimitSource(1) != "client:bolt" {
		t.Errorf("Source %q, LimitSource %q; want override:bolt, client:bolt", byID.Source(1), byID.LimitSource(1))
	}
	if byID.Limit(0) != perMinute(500) || byID.Source(0) != "client:bolt" {
		t.Errorf("api: %v from %q, want the client's own 500/m", byID.Limit(0), byID.Source(0))
	}
	if old := callerByID(t, c, "bolt"); old.Limit(1) != boltClaims || old.Source(1) != "client:bolt" {
		t.Errorf("the original's bolt: %v from %q, want %v from client:bolt", old.Limit(1), old.Source(1), boltClaims)
	}
	for _, id := range []string{"acme", "corp"} {
		if callerByID(t, o, id) != callerByID(t, c, id) {
			t.Errorf("%s, not overridden, is a new Caller", id)
		}
	}
	if o.Anonymous() != c.Anonymous() || o.Unidentified() != c.Unidentified() {
		t.Error("the anonymous or unidentified caller changed")
	}
}

// TestOverrideBurst: an override's burst is its own, or the rule's scaled
// to the new rate; a window algorithm takes none.
func TestOverrideBurst(t *testing.T) {
	c := overridePolicy(t)
	for _, tt := range []struct {
		o    policy.Override
		want limiter.Limit
	}{
		{policy.Override{Client: "corp", Rule: "claims", Rate: rate(40, time.Second)}, limiter.MustNew(limiter.TokenBucket, 40, time.Second, 80)},
		{policy.Override{Client: "corp", Rule: "claims", Rate: rate(40, time.Second), Burst: 5}, limiter.MustNew(limiter.TokenBucket, 40, time.Second, 5)},
		{policy.Override{Client: "corp", Rule: "claims", Rate: rate(10, time.Second), Burst: 1000}, limiter.MustNew(limiter.TokenBucket, 10, time.Second, 1000)},
	} {
		o := withOverrides(t, c, tt.o)
		if got := callerByID(t, o, "corp").Limit(1); got != tt.want {
			t.Errorf("%+v: %v, want %v", tt.o, got, tt.want)
		}
	}
}

// TestOverrideErrors: each override that cannot apply is left out and
// reported at its index, with the part at fault and what is accepted; the
// others apply.
func TestOverrideErrors(t *testing.T) {
	c := overridePolicy(t)
	tests := []struct {
		name string
		o    policy.Override
		path string
		msg  string // a part of the message
	}{
		{"unknown client", clientOverride("nope", "api", rate(1, time.Minute)), "target", `unknown client "nope" (a client id from clients.list: acme, bolt, corp; or ip:ADDR[/BITS])`},
		{"no target", policy.Override{Rule: "api", Rate: rate(1, time.Minute)}, "target", "missing (a client id from clients.list, or ip:ADDR[/BITS])"},
		{"two targets", policy.Override{Client: "acme", Addr: prefix("192.0.2.0/24"), Rule: "api", Rate: rate(1, time.Minute)}, "target", "an override has one target"},
		{"host bits", policy.Override{Addr: netip.PrefixFrom(addr("203.0.113.7"), 24), Rule: "api", Rate: rate(1, time.Minute)}, "target", "203.0.113.7/24 has bits set beyond its /24 (write ip:203.0.113.0/24, or ip:203.0.113.7 for the one address)"},
		{"invalid range", policy.Override{Addr: netip.PrefixFrom(addr("203.0.113.7"), 33), Rule: "api", Rate: rate(1, time.Minute)}, "target", "not a valid address range"},
		{"short mapped range", policy.Override{Addr: prefix("::ffff:0.0.0.0/80"), Rule: "api", Rate: rate(1, time.Minute)}, "target", "shorter than /96"},
		{"no rule", policy.Override{Client: "acme", Rate: rate(1, time.Minute)}, "rule", "missing: name the rule whose limit the override replaces (rules with a rate: api, claims, bulk, log), or block the target"},
		{"unknown rule", clientOverride("acme", "nope", rate(1, time.Minute)), "rule", `unknown rule "nope" (rules with a rate: api, claims, bulk, log)`},
		{"concurrency rule", clientOverride("acme", "inflight", rate(1, time.Minute)), "rule", "rule inflight limits requests in flight, and an override sets a rate"},
		{"rule without a rate", clientOverride("acme", "low", rate(1, time.Minute)), "rule", "rule low has no rate to override: it only classifies requests"},
		{"no rate", policy.Override{Client: "acme", Rule: "api"}, "rate", "missing: give rule api a rate such as 100/m, or block the target"},
		{"rate 0", clientOverride("acme", "api", rate(0, time.Minute)), "rate", "rate 0 out of range"},
		{"period too short", clientOverride("acme", "api", rate(1, time.Nanosecond)), "rate", "period 1ns out of range"},
		{"sliding_log too large", clientOverride("acme", "log", rate(1_000_000, time.Minute)), "rate", "sliding_log rate 1000000 too large"},
		{"negative burst", policy.Override{Client: "acme", Rule: "claims", Rate: rate(1, time.Second), Burst: -1}, "burst", "-1 is negative"},
		{"burst of a window", policy.Override{Client: "acme", Rule: "api", Rate: rate(1, time.Second), Burst: 5}, "burst", "sliding_window takes no burst"},
		{"cost never allowed", clientOverride("acme", "bulk", rate(4, time.Minute)), "rate", "rate 4/m allows at most 4 at once, less than rule bulk's cost 5: every request would be refused (a limit of at least 5 at once)"},
		{"cost never allowed by an address", addrOverride("192.0.2.0/24", "bulk", rate(4, time.Minute)), "rate", "less than rule bulk's cost 5"},
		{"block with a rule", policy.Override{Client: "acme", Block: true, Rule: "api"}, "rule", "a block applies to every rule, not to rule api alone"},
		{"block with a rate", policy.Override{Client: "acme", Block: true, Rate: rate(1, time.Minute)}, "rate", "a block refuses every request and takes no rate"},
		{"block with a burst", policy.Override{Client: "acme", Block: true, Burst: 3}, "burst", "takes no burst"},
		{"block of an unknown client", policy.Override{Client: "nope", Block: true}, "target", `unknown client "nope"`},
	}
	good := clientOverride("corp", "api", rate(7, time.Minute))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, errs := c.WithOverrides([]policy.Override{good, tt.o, good})
			if len(errs) != 1 || errs[0].Index != 1 || errs[0].Err == nil {
				t.Fatalf("errs = %+v, want one at index 1", errs)
			}
			if fe := errs[0].Err; fe.Path != tt.path || !strings.Contains(fe.Msg, tt.msg) {
				t.Errorf("%s: %q, want %s: ...%q...", fe.Path, fe.Msg, tt.path, tt.msg)
			}
			if got := len(o.Overrides()); got != 2 {
				t.Errorf("%d overrides in force, want the 2 good ones", got)
			}
			if l := callerByID(t, o, "corp").Limit(0); l != perMinute(7) {
				t.Errorf("the good override: corp's api %v, want 7/m", l)
			}
			if tt.o.Client == "acme" && callerByID(t, o, "acme") != callerByID(t, c, "acme") {
				t.Error("the refused override changed acme's caller")
			}
			if o.HasAddrOverrides() {
				t.Error("a refused address override is in force")
			}
		})
	}
}

// TestBlocks: a blocked client's caller says so and until when; a blocked
// range is found for every address in it, the longest first, whatever
// ranges override limits only.
func TestBlocks(t *testing.T) {
	c := overridePolicy(t)
	until := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	o := withOverrides(t, c,
		policy.Override{Client: "acme", Block: true, Until: until},
		policy.Override{Addr: prefix("203.0.0.0/16"), Block: true},
		policy.Override{Addr: prefix("203.0.113.0/24"), Block: true, Until: until},
		addrOverride("203.0.113.128/25", "api", rate(1, time.Minute)),
		policy.Override{Addr: prefix("2001:db8::/48"), Block: true},
	)
	if u, ok := callerByID(t, o, "acme").Blocked(); !ok || !u.Equal(until) {
		t.Errorf("acme: Blocked() = %v, %v; want %v, true", u, ok, until)
	}
	for _, cl := range []*policy.Caller{callerByID(t, o, "bolt"), callerByID(t, c, "acme"), o.Anonymous()} {
		if _, ok := cl.Blocked(); ok {
			t.Errorf("%q blocked", cl.ID)
		}
	}
	for _, tt := range []struct {
		at    string
		want  string // "" for none
		until time.Time
	}{
		{"203.0.113.200", "203.0.113.0/24", until},
		{"::ffff:203.0.113.5", "203.0.113.0/24", until},
		{"203.0.5.5", "203.0.0.0/16", time.Time{}},
		{"2001:db8:0:ffff::1", "2001:db8::/48", time.Time{}},
		{"198.51.100.1", "", time.Time{}},
		{"2001:db9::1", "", time.Time{}},
	} {
		p, u, ok := o.AddrBlocked(addr(tt.at))
		if ok != (tt.want != "") || ok && (p != prefix(tt.want) || !u.Equal(tt.until)) {
			t.Errorf("AddrBlocked(%s) = %v, %v, %v; want %q until %v", tt.at, p, u, ok, tt.want, tt.until)
		}
	}
	if _, _, ok := c.AddrBlocked(addr("203.0.113.200")); ok || c.HasAddrOverrides() {
		t.Error("the original has an address block")
	}
}

// TestWithOverridesReplaces: the overrides given replace those of the
// policy they are applied to; none restores the file's limits.
func TestWithOverridesReplaces(t *testing.T) {
	c := overridePolicy(t)
	a := withOverrides(t, c, clientOverride("acme", "api", rate(7, time.Minute)), addrOverride("192.0.2.0/24", "api", rate(3, time.Minute)))
	b := withOverrides(t, a, clientOverride("bolt", "api", rate(8, time.Minute)))
	if l := callerByID(t, b, "acme").Limit(0); l != largeAPI {
		t.Errorf("acme after another set: %v, want its plan's %v", l, largeAPI)
	}
	if l := callerByID(t, b, "bolt").Limit(0); l != perMinute(8) {
		t.Errorf("bolt: %v, want 8/m", l)
	}
	if b.HasAddrOverrides() {
		t.Error("the first set's address override is still in force")
	}
	none := withOverrides(t, b)
	for _, id := range []string{"acme", "bolt", "corp"} {
		if callerByID(t, none, id) != callerByID(t, c, id) {
			t.Errorf("%s after no overrides is not the file's caller", id)
		}
	}
	if got := b.Overrides(); len(got) != 1 || got[0].Client != "bolt" {
		t.Errorf("Overrides() = %+v, want bolt's alone", got)
	}
}

// TestWithOverridesConcurrent: a policy in use is read while overrides
// are applied to it (run with -race): it never changes.
func TestWithOverridesConcurrent(t *testing.T) {
	c := overridePolicy(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				cl, _ := c.CallerByKey("k-bolt-1")
				if l, src := c.LimitAt(cl, 0, addr("203.0.113.7")); l != perMinute(500) || src != "client:bolt" {
					t.Errorf("the original changed: %v from %q", l, src)
					return
				}
				if _, ok := cl.Blocked(); ok {
					t.Error("the original's bolt is blocked")
					return
				}
			}
		})
	}
	for n := range 200 {
		o := withOverrides(t, c, clientOverride("bolt", "api", rate(int64(n+1), time.Minute)),
			addrOverride("203.0.113.0/24", "api", rate(3, time.Minute)), policy.Override{Client: "bolt", Block: true})
		cl, _ := o.CallerByKey("k-bolt-2")
		if l, _ := o.LimitAt(cl, 0, addr("203.0.113.7")); l != perMinute(int64(n+1)) {
			t.Fatalf("override %d: %v", n, l)
		}
	}
	close(stop)
	wg.Wait()
}

// TestTargets: ParseTarget reads what Target writes, and the ranges it
// refuses say what to write instead.
func TestTargets(t *testing.T) {
	for _, tt := range []struct {
		in, client, addr, target string
	}{
		{"partner-a", "partner-a", "", "partner-a"},
		{"ip:203.0.113.7", "", "203.0.113.7/32", "ip:203.0.113.7/32"},
		{"ip:203.0.113.0/24", "", "203.0.113.0/24", "ip:203.0.113.0/24"},
		{"ip:2001:db8::/48", "", "2001:db8::/48", "ip:2001:db8::/48"},
		{"ip:2001:db8::1", "", "2001:db8::1/128", "ip:2001:db8::1/128"},
		{"ip:::ffff:203.0.113.7", "", "203.0.113.7/32", "ip:203.0.113.7/32"},
		{"ip:::ffff:203.0.113.0/120", "", "203.0.113.0/24", "ip:203.0.113.0/24"},
		{"ip:0.0.0.0/0", "", "0.0.0.0/0", "ip:0.0.0.0/0"},
	} {
		client, p, err := policy.ParseTarget(tt.in)
		if err != nil {
			t.Errorf("ParseTarget(%q): %v", tt.in, err)
			continue
		}
		want := netip.Prefix{}
		if tt.addr != "" {
			want = prefix(tt.addr)
		}
		if client != tt.client || p != want {
			t.Errorf("ParseTarget(%q) = %q, %v; want %q, %v", tt.in, client, p, tt.client, want)
		}
		if got := (policy.Override{Client: client, Addr: p}).Target(); got != tt.target {
			t.Errorf("Target of %q = %q, want %q", tt.in, got, tt.target)
		}
	}
	for _, tt := range []struct{ in, msg string }{
		{"", `"" is not a target`},
		{"partner a", `"partner a" is not a target (a client id`},
		{"IP:203.0.113.7", "is not a target"},
		{"ip:", "ip: without an address"},
		{"ip:203.0.113.7/24", "203.0.113.7/24 has bits set beyond its /24 (write ip:203.0.113.0/24, or ip:203.0.113.7 for the one address)"},
		{"ip:::ffff:203.0.113.7/120", "write ip:203.0.113.0/24"},
		{"ip:2001:db8::1/48", "write ip:2001:db8::/48"},
		{"ip:203.0.113.0/33", "is not an address range"},
		{"ip:203.0.113", "is not an address"},
		{"ip:fe80::1%eth0", "has a zone"},
		{"ip:::ffff:0.0.0.0/80", "shorter than /96"},
	} {
		_, _, err := policy.ParseTarget(tt.in)
		fe, ok := err.(*policy.FieldError)
		if !ok || fe.Path != "target" || !strings.Contains(fe.Msg, tt.msg) {
			t.Errorf("ParseTarget(%q) = %v, want a target error with %q", tt.in, err, tt.msg)
		}
	}
}

// FuzzParseTarget: ParseTarget never panics; what it reads names exactly
// one target, which Target writes back in a form it reads the same; what
// it refuses is a target FieldError.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"partner-a", "ip:203.0.113.7", "ip:203.0.113.0/24", "ip:2001:db8::/48", "ip:::ffff:1.2.3.4/120",
		"ip:1.2.3.4/24", "ip:fe80::1%eth0", "ip:", "IP:1.2.3.4", "", "ip:::/0", "ip:1.2.3.4/-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		client, p, err := policy.ParseTarget(s)
		if err != nil {
			fe, ok := err.(*policy.FieldError)
			if !ok || fe.Path != "target" || fe.Msg == "" {
				t.Fatalf("ParseTarget(%q): error %v (%T), want a target FieldError", s, err, err)
			}
			return
		}
		if (client == "") == !p.IsValid() {
			t.Fatalf("ParseTarget(%q) = %q, %v: want exactly one target", s, client, p)
		}
		if p.IsValid() && (p.Masked() != p || p.Addr().Is4In6() || p.Addr().Zone() != "") {
			t.Fatalf("ParseTarget(%q) = %v: not canonical", s, p)
		}
		target := policy.Override{Client: client, Addr: p}.Target()
		c2, p2, err := policy.ParseTarget(target)
		if err != nil || c2 != client || p2 != p {
			t.Fatalf("ParseTarget(Target %q) = %q, %v, %v; want %q, %v", target, c2, p2, err, client, p)
		}
	})
}
