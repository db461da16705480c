package gateway_test

import (
	"net/http"
	"testing"
	"time"
)

// TestTargetReachesUpstream: the request target that reaches an upstream
// without a path of its own, written by hand on a raw connection: the
// cleaned path and the query, without an empty query (a fragment is
// refused, 400, before), whether the caller's target goes on as it came or is built again.
func TestTargetReachesUpstream(t *testing.T) {
	h := startGateway(t, standardConfig)
	for _, c := range []struct{ sent, want string }{
		{"/claims/1", "/claims/1"},
		{"/claims/1?a=1&b=%2F", "/claims/1?a=1&b=%2F"},
		{"/claims/1?", "/claims/1"},
		{"/claims/./1?a", "/claims/1?a"},
		{"/claims/x/../1", "/claims/1"},
		{"/claims//1?a", "/claims/1?a"},
		{"/claims/%41?b", "/claims/A?b"},
	} {
		c2 := h.dial()
		c2.write("GET " + c.sent + " HTTP/1.1\r\nHost: x\r\nX-API-Key: " + keyA + "\r\nConnection: close\r\n\r\n")
		resp, body, err := c2.read(5 * time.Second)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %v %v %q", c.sent, resp, err, body)
			continue
		}
		if got := h.up.lastSeen(t).RequestURI; got != c.want {
			t.Errorf("%s reached the upstream as %s, want %s", c.sent, got, c.want)
		}
	}
}
