package fastproxy

import (
	"net/netip"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestForwardedForElement: the Forwarded element naming the peer, as RFC
// 7239 spells it: an IPv4-mapped address as IPv4, an IPv6 one quoted, a
// zone dropped.
func TestForwardedForElement(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1":        "for=192.0.2.1",
		"::ffff:192.0.2.1": "for=192.0.2.1",
		"2001:db8::1":      `for="[2001:db8::1]"`,
		"::1":              `for="[::1]"`,
		"fe80::1%eth0":     `for="[fe80::1]"`, // a zone means nothing to the upstream
	} {
		f := Forwarding{Peer: netip.MustParseAddr(in), Forwarded: true}
		var caller, out fasthttp.RequestHeader
		f.forwardingHeaders(&caller, &out, false)
		if got := string(out.Peek("Forwarded")); got != want {
			t.Errorf("Forwarded for %s = %s, want %s", in, got, want)
		}
	}
}
