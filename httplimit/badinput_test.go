package httplimit_test

import (
	"math/rand/v2"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// Guessing keys costs the store nothing: 10,000 distinct random keys (some
// long, some with control characters) are all answered 401 (400 for a
// list) without one store call, so the store holds no key for them.
func TestManyRandomKeysNeverReachStore(t *testing.T) {
	p := partners()
	p.Rules = append(p.Rules, policy.Rule{Name: "per-ip", Key: policy.KeySpec{Kind: policy.KeyIP},
		Algorithm: limiter.SlidingWindow, Rate: rate(1_000_000, time.Minute)})
	h := newHarness(t, p)
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 10_000
	for i := range n {
		b := make([]byte, 1+rng.IntN(300))
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		if i%2 == 0 { // half of them printable, like real keys
			for j := range b {
				b[j] = '!' + b[j]%94
			}
		}
		q := req{path: "/claims/" + string(rune('a'+i%26)), remote: netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)}), 1).String(),
			header: http.Header{"X-Api-Key": {string(b)}}}
		want := http.StatusUnauthorized
		if strings.Contains(string(b), ",") {
			want = http.StatusBadRequest
		}
		if w := h.do(q); w.Code != want {
			t.Fatalf("random key %d: status %d, want %d", i, w.Code, want)
		}
	}
	if calls, _ := h.store.stats(); calls != 0 {
		t.Errorf("store called %d times for unknown keys", calls)
	}
	if got := h.mem.Len(); got != 0 {
		t.Errorf("the store holds %d keys after %d unknown callers, want 0", got, n)
	}
	if h.reportCount() != n || h.servedCount() != 0 {
		t.Errorf("%d reports, %d served; want %d and 0", h.reportCount(), h.servedCount(), n)
	}
}

// X-Forwarded-For and Forwarded from a trusted proxy may hold anything the
// client wrote before it: the limiter must not panic and must count the
// request under a sane address.
func TestMalformedXForwardedForFromTrustedProxy(t *testing.T) {
	checkCountedAs(t, trustedPolicy(policy.XForwardedFor), []countedAs{
		{"garbage XFF", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"!!garbage!!"}}, "10.0.0.1"},
		{"garbage right of an address", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"203.0.113.9, garbage"}}, "10.0.0.1"},
		{"garbage left of an address", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"garbage, 203.0.113.9"}}, "203.0.113.9"},
		{"empty XFF", "10.0.0.1:1", http.Header{"X-Forwarded-For": {""}}, "10.0.0.1"},
		{"only commas", "10.0.0.1:1", http.Header{"X-Forwarded-For": {",,,, ,"}}, "10.0.0.1"},
		{"bad port", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"203.0.113.9:99999"}}, "10.0.0.1"},
		{"bracketed IPv4", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"[203.0.113.9]"}}, "203.0.113.9"},
		{"5000 untrusted hops", "10.0.0.1:1", http.Header{"X-Forwarded-For": {many("198.51.100.1", 4999) + ", 203.0.113.9"}}, "203.0.113.9"},
		{"5000 trusted hops", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"203.0.113.9, " + many("10.0.0.2", 5000)}}, "10.0.0.2"},
		{"5000 garbage hops", "10.0.0.1:1", http.Header{"X-Forwarded-For": {many("x", 5000)}}, "10.0.0.1"},
		{"5000 header lines", "10.0.0.1:1", http.Header{"X-Forwarded-For": strings.Split(many("198.51.100.1", 5000), ", ")}, "198.51.100.1"},
		{"64 KiB hop", "10.0.0.1:1", http.Header{"X-Forwarded-For": {strings.Repeat("9", 64<<10)}}, "10.0.0.1"},
		{"NUL and newlines", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"203.0.113.9\x00, \r\n1.2.3.4"}}, "1.2.3.4"},
		{"IPv6 zone in XFF", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"2001:db8:1::9%eth0"}}, "2001:db8:1::9"},
		{"XFF garbage, Forwarded good", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"nonsense"}, "Forwarded": {"for=203.0.113.9"}}, "10.0.0.1"},
		{"mapped IPv4", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"::ffff:203.0.113.9"}}, "203.0.113.9"},
		{"unspecified", "10.0.0.1:1", http.Header{"X-Forwarded-For": {"0.0.0.0"}}, "0.0.0.0"},
	})
}

func TestMalformedForwardedFromTrustedProxy(t *testing.T) {
	checkCountedAs(t, trustedPolicy(policy.Forwarded), []countedAs{
		{"IPv6 zone in Forwarded", "10.0.0.1:1", http.Header{"Forwarded": {`for="[2001:db8:1::9%25eth0]"`}}, "2001:db8:1::9"},
		{"IPv6 zone and port in Forwarded", "10.0.0.1:1", http.Header{"Forwarded": {`for="[2001:db8:1::9%eth0]:80"`}}, "2001:db8:1::9"},
		{"unbalanced bracket", "10.0.0.1:1", http.Header{"Forwarded": {`for="[2001:db8:1::9"`}}, "2001:db8:1::9"},
		{"for=unknown", "10.0.0.1:1", http.Header{"Forwarded": {"for=unknown"}}, "10.0.0.1"},
		{"obfuscated id", "10.0.0.1:1", http.Header{"Forwarded": {"for=_hidden, for=\"_SEVKISEK\""}}, "10.0.0.1"},
		{"obfuscated id with port", "10.0.0.1:1", http.Header{"Forwarded": {`for="_hidden:_port"`}}, "10.0.0.1"},
		{"empty for", "10.0.0.1:1", http.Header{"Forwarded": {"for="}}, "10.0.0.1"},
		{"for without value", "10.0.0.1:1", http.Header{"Forwarded": {"for"}}, "10.0.0.1"},
		{"Forwarded without for, garbage", "10.0.0.1:1", http.Header{"Forwarded": {";;;,,,===;by"}}, "10.0.0.1"},
		{"Forwarded garbage, XFF good", "10.0.0.1:1", http.Header{"Forwarded": {"nonsense"}, "X-Forwarded-For": {"203.0.113.9"}}, "10.0.0.1"},
		{"5000 Forwarded elements", "10.0.0.1:1", http.Header{"Forwarded": {many("for=198.51.100.1;proto=http", 5000)}}, "198.51.100.1"},
		{"unterminated quote", "10.0.0.1:1", http.Header{"Forwarded": {`for="203.0.113.9`}}, "203.0.113.9"},
		{"uppercase FOR", "10.0.0.1:1", http.Header{"Forwarded": {`FOR=203.0.113.9`}}, "203.0.113.9"},
		{"mapped IPv4", "10.0.0.1:1", http.Header{"Forwarded": {`for="[::ffff:203.0.113.9]"`}}, "203.0.113.9"},
	})
}

// many returns n copies of hop joined by ", ".
func many(hop string, n int) string { return strings.TrimSuffix(strings.Repeat(hop+", ", n), ", ") }

// A peer address net/http could not have written still gets an answer.
func TestUnreadableRemoteAddr(t *testing.T) {
	for _, remote := range []string{"pipe", "192.0.2.1", "[::1", "@unix", "192.0.2.1:port"} {
		h := newHarness(t, byIP(1))
		if w := h.do(req{remote: remote}); w.Code != 200 {
			t.Errorf("RemoteAddr %q: status %d", remote, w.Code)
		}
		w := h.do(req{remote: remote})
		if w.Code != 429 {
			t.Errorf("RemoteAddr %q: unreadable peers do not share a counter: second request %d", remote, w.Code)
			continue
		}
		if d := readProblem(t, w, 429).Detail; strings.Contains(d, "invalid IP") {
			t.Errorf("RemoteAddr %q: detail %q", remote, d)
		}
	}
}

// Counting by a header the caller chooses must not let the caller choose
// how much memory each counter takes: a 64 KiB value is a short store key,
// and values that differ only far in still count apart.
func TestHeaderKeyBoundsStoreKey(t *testing.T) {
	p := policy.Policy{Rules: []policy.Rule{{
		Name: "per-tenant", Key: policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant"},
		Algorithm: limiter.FixedWindow, Rate: rate(1, time.Minute),
	}}}
	h := newHarness(t, p)
	long := strings.Repeat("t", 64<<10)
	ka := h.keyOf(req{header: http.Header{"X-Tenant": {long + "a"}}})
	kb := h.keyOf(req{header: http.Header{"X-Tenant": {long + "b"}}})
	if ka == kb {
		t.Error("two long values share a counter")
	}
	wantStatus(t, h.do(req{header: http.Header{"X-Tenant": {long + "a"}}}), 429, "same long value again")
	if len(ka) > 1024 {
		t.Errorf("a 64 KiB header value makes a %d-byte store key (want at most 1 KiB): a bounded store is then bounded in keys, not in bytes", len(ka))
	}
}
