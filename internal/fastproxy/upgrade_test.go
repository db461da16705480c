package fastproxy_test

import (
	"bufio"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/internal/fastproxy"
)

// TestUpgradeOf: which requests are upgrades the proxy carries.
func TestUpgradeOf(t *testing.T) {
	for _, c := range []struct {
		name   string
		fields []string
		want   string
	}{
		{"websocket", []string{"Connection: Upgrade", "Upgrade: websocket"}, "websocket"},
		{"upgrade among Connection's tokens, any case", []string{"Connection: keep-alive, upgrade", "Upgrade: WebSocket"}, "WebSocket"},
		{"no Connection: Upgrade", []string{"Upgrade: websocket"}, ""},
		{"no Upgrade", []string{"Connection: Upgrade"}, ""},
		{"empty Upgrade", []string{"Connection: Upgrade", "Upgrade: "}, ""},
		{"two Upgrade fields", []string{"Connection: Upgrade", "Upgrade: websocket", "Upgrade: foo"}, ""},
		{"h2c", []string{"Connection: Upgrade, HTTP2-Settings", "Upgrade: h2c", "HTTP2-Settings: AAMA"}, ""},
		{"h2c among others", []string{"Connection: Upgrade", "Upgrade: websocket, H2C"}, ""},
		{"with a body", []string{"Connection: Upgrade", "Upgrade: websocket", "Content-Length: 3"}, ""},
		{"with a chunked body", []string{"Connection: Upgrade", "Upgrade: websocket", "Transfer-Encoding: chunked"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h fasthttp.RequestHeader
			if err := h.Read(bufio.NewReader(strings.NewReader(req("GET /ws", c.fields...)))); err != nil {
				t.Fatal(err)
			}
			if got := string(fastproxy.UpgradeOf(&h)); got != c.want {
				t.Errorf("UpgradeOf = %q, want %q", got, c.want)
			}
		})
	}
}
