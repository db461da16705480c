package decision

// These tests call clientAddr directly: the fuzz target needs the address
// itself, not the store key it ends up in.

import (
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

func fuzzPolicy(t testing.TB, from policy.ForwardedHeader) *policy.Compiled {
	t.Helper()
	c, err := policy.Compile(policy.Policy{
		ForwardedHeader: from,
		TrustedProxies: []netip.Prefix{
			netip.MustParsePrefix("10.0.0.0/8"),
			netip.MustParsePrefix("2001:db8:ffff::/48"),
			netip.MustParsePrefix("fe80::/10"),
		},
		Rules: []policy.Rule{{Name: "per-ip", Key: policy.KeySpec{Kind: policy.KeyIP},
			Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 1, Period: time.Second}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// FuzzClientAddr: whatever the peer and the forwarding headers say,
// clientAddr does not panic and returns either the peer's address or one
// written in the header the policy reads (never the other one), and the
// latter only when the peer is trusted. Header arguments hold several field
// lines separated by '\n'.
func FuzzClientAddr(f *testing.F) {
	seeds := [][3]string{
		{"192.0.2.1:1234", "", ""},
		{"10.0.0.1:1", "", "203.0.113.9"},
		{"10.0.0.1:1", "", "198.51.100.1, 203.0.113.9, 10.0.0.7"},
		{"10.0.0.1:1", "for=192.0.2.60;proto=http;by=203.0.113.43, for=10.0.0.2", "198.51.100.1"},
		{"10.0.0.1:1", `for="[2001:db8:cafe::17]:4711"`, ""},
		{"[2001:db8:ffff::1]:443", "", "2001:db8::1\n2001:db8:ffff::2"},
		{"[fe80::1%eth0]:1", `for="[fe80::2%25eth0]"`, "[fe80::3%eth1]:80"},
		{"10.0.0.1:1", "for=unknown, for=_hidden", "garbage,,, ,"},
		{"10.0.0.1:1", "", "::ffff:203.0.113.9"},
		{"[::ffff:10.0.0.1]:1", "", "[203.0.113.9]:80"},
		{"10.0.0.1:1", "", strings.Repeat("10.0.0.2,", 100) + "x"},
		{"10.0.0.1:1", `FOR="203.0.113.9`, ""},
		{"10.0.0.1:1", `for="[2001:db8::1`, "\x00\r\n"},
		{"pipe", "for=203.0.113.9", "203.0.113.9"},
		{"10.0.0.1", "", "203.0.113.9"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2])
	}
	readers := []struct {
		pol    *policy.Compiled
		header string
	}{
		{fuzzPolicy(f, policy.XForwardedFor), "X-Forwarded-For"},
		{fuzzPolicy(f, policy.Forwarded), "Forwarded"},
	}
	f.Fuzz(func(t *testing.T, remote, fwd, xff string) {
		h := fields{}
		if fwd != "" {
			h["Forwarded"] = strings.Split(fwd, "\n")
		}
		if xff != "" {
			h["X-Forwarded-For"] = strings.Split(xff, "\n")
		}
		peer, err := netip.ParseAddrPort(remote) // as a transport reads the peer
		v := &Verdict{req: Request{Peer: peer, Header: h}}
		for _, rd := range readers {
			got := clientAddr(rd.pol, v)
			if err != nil {
				if got.IsValid() {
					t.Fatalf("unreadable peer %q: got %v, want the zero Addr", remote, got)
				}
				continue
			}
			if got == peer.Addr().Unmap().WithZone("") {
				continue
			}
			if !rd.pol.TrustedProxy(peer.Addr()) {
				t.Fatalf("untrusted peer %q: got %v from its headers", remote, got)
			}
			if !writtenIn(got, strings.Join(h[rd.header], "\n")) {
				t.Fatalf("reading %s: peer %q, Forwarded %q, X-Forwarded-For %q: got %v, which is neither the peer nor in %s",
					rd.header, remote, fwd, xff, got, rd.header)
			}
		}
	})
}

// writtenIn reports whether text holds a written form of addr (zone and
// IPv4 mapping aside), bracketed or not, with or without a port.
func writtenIn(addr netip.Addr, text string) bool {
	want := addr.Unmap().WithZone("")
	for tok := range strings.FieldsFuncSeq(text, func(r rune) bool { return strings.ContainsRune(",;= \t\r\n\"", r) }) {
		var cand netip.Addr
		if ap, err := netip.ParseAddrPort(tok); err == nil {
			cand = ap.Addr()
		} else if a, err := netip.ParseAddr(strings.Trim(tok, "[]")); err == nil {
			cand = a
		} else {
			continue
		}
		if cand.Unmap().WithZone("") == want {
			return true
		}
	}
	return false
}

// maxHops promises that "a forged header of thousands of entries costs
// nothing": reading the client address from a 64 KiB X-Forwarded-For or
// Forwarded (net/http accepts up to 1 MiB of headers) must not allocate in
// proportion to it.
func TestForwardedHopsCostBounded(t *testing.T) {
	for _, c := range []struct {
		from   policy.ForwardedHeader
		header string
		value  string
	}{
		{policy.XForwardedFor, "X-Forwarded-For", strings.Repeat("1,", 32<<10) + "203.0.113.9"},
		{policy.Forwarded, "Forwarded", strings.Repeat("for=1,", 11<<10) + "for=203.0.113.9"},
	} {
		pol := fuzzPolicy(t, c.from)
		v := &Verdict{req: Request{Peer: netip.MustParseAddrPort("10.0.0.1:1"), Header: fields{c.header: {c.value}}}}
		if got := clientAddr(pol, v); got != netip.MustParseAddr("203.0.113.9") {
			t.Fatalf("%s: got %v", c.header, got)
		}
		const runs = 3
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			clientAddr(pol, v)
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 32<<10 {
			t.Errorf("clientAddr allocates %d KiB for a %d KiB %s; it reads at most %d hops", per>>10, len(c.value)>>10, c.header, maxHops)
		}
	}
}
