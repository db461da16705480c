package gateway

import (
	"net/netip"
	"testing"
)

func TestForwardedForElement(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1":        "for=192.0.2.1",
		"::ffff:192.0.2.1": "for=192.0.2.1",
		"2001:db8::1":      `for="[2001:db8::1]"`,
		"::1":              `for="[::1]"`,
		"fe80::1%eth0":     `for="[fe80::1]"`, // a zone means nothing to the upstream
	} {
		if got := forwardedFor(netip.MustParseAddr(in)); got != want {
			t.Errorf("forwardedFor(%s) = %s, want %s", in, got, want)
		}
	}
}
