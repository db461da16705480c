package gateway_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// callerHopFields are hop-by-hop fields (RFC 9110 7.6.1, and those of older
// proxies) as a caller may send them; none of them, nor the field the
// caller's Connection names, may reach the upstream.
var callerHopFields = []string{"Keep-Alive: timeout=5", "Proxy-Connection: keep-alive", "Proxy-Authenticate: Basic",
	"Proxy-Authorization: Basic eA==", "TE: trailers", "Trailer: X-Sum", "X-Hop: 1"}

// TestHopByHopNotSentOn: a caller's hop-by-hop fields reach the upstream
// through neither path that passes requests on: the pooled one for a
// plain request (Connection and Upgrade dropped too) and the connection of
// its own for an upgrade (Connection: Upgrade and Upgrade written afresh).
func TestHopByHopNotSentOn(t *testing.T) {
	up := newEchoUpstream(t)
	ln, adm := listen(t), listen(t)
	runGatewayOn(t, ln, adm, strings.Replace(standardConfig, "{{UPSTREAM}}", up.srv.URL, 1))
	fields := strings.Join(callerHopFields, "\r\n") + "\r\n"
	plain := "GET /claims/1 HTTP/1.1\r\nHost: x\r\nX-API-Key: " + keyA + "\r\nConnection: keep-alive, X-Hop\r\n" +
		"Upgrade: h2c\r\n" + fields + "\r\n"
	upgrade := strings.Replace(upgradeRequest("/claims/1", "websocket"), "Connection: keep-alive, Upgrade\r\n",
		"Connection: keep-alive, Upgrade, X-Hop\r\n"+fields, 1)
	for _, c := range []struct {
		name, raw string
		status    int
		want      map[string]string // what the upstream got of Connection and Upgrade
	}{
		{"plain", plain, http.StatusOK, map[string]string{"Connection": "", "Upgrade": ""}},
		{"upgrade", upgrade, http.StatusSwitchingProtocols, map[string]string{"Connection": "Upgrade", "Upgrade": "websocket"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := sendRaw(t, ln, c.raw)
			_ = r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(r.br, nil)
			if err != nil || resp.StatusCode != c.status {
				t.Fatalf("answer %v, %v; want %d", resp, err, c.status)
			}
			got := <-up.seen
			for _, f := range callerHopFields {
				name, _, _ := strings.Cut(f, ":")
				if v, ok := got[http.CanonicalHeaderKey(name)]; ok {
					t.Errorf("the upstream got %s %q", name, v)
				}
			}
			for name, want := range c.want {
				if v := strings.Join(got.Values(name), ", "); v != want {
					t.Errorf("the upstream got %s %q, want %q", name, v, want)
				}
			}
			if got.Get("X-Sluice-Client") != "partner-a" {
				t.Errorf("the upstream got X-Sluice-Client %q (all: %v), want partner-a", got.Get("X-Sluice-Client"), got)
			}
		})
	}
}
