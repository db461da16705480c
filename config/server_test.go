package config

import (
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

func TestServerDefaults(t *testing.T) {
	f, err := Parse("t.yaml", []byte(head+"rules: [{name: a, rate: 1/s}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Server != DefaultServer() {
		t.Errorf("server = %+v, want the defaults %+v", f.Server, DefaultServer())
	}
}

func TestServerBlock(t *testing.T) {
	text := head + `server:
  read_header_timeout: 2s
  body_timeout: 1m
  idle_timeout: 30s
  upstream_timeout: 500ms
  max_connections: 64
  body_buffer: 1024
  body_buffer_total: 1048576
  max_streamed_bodies: 8
  tls_handshake_timeout: 3s
  max_tls_handshakes: 32
  shutdown_delay: 5s
  drain_timeout: 0s
rules: [{name: a, rate: 1/s}]
`
	f, err := Parse("t.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := Server{ReadHeaderTimeout: 2 * time.Second, BodyTimeout: time.Minute, IdleTimeout: 30 * time.Second,
		UpstreamTimeout: 500 * time.Millisecond, MaxConnections: 64, ShutdownDelay: 5 * time.Second,
		BodyBuffer: 1024, BodyBufferTotal: 1 << 20, MaxStreamedBodies: 8, TLSHandshakeTimeout: 3 * time.Second, MaxTLSHandshakes: 32}
	if f.Server != want {
		t.Errorf("server = %+v, want %+v", f.Server, want)
	}
	var b strings.Builder
	if err := f.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	line := "server: timeouts header 2s, body 1m0s, idle 30s, upstream 500ms; at most 64 connections; shutdown delay 5s, drain 0s; " +
		"bodies read first up to 1024 bytes, 1048576 at once, at most 8 streamed\n"
	if !strings.Contains(b.String(), line) {
		t.Errorf("summary lacks %q:\n%s", line, b.String())
	}
}

func TestServerErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"timeout syntax", "server: {body_timeout: slow}\n",
			`t.yaml:3:24: server.body_timeout: "slow" is not a duration (such as 500ms, 30s, 2m; default 30s)`},
		{"timeout zero", "server: {upstream_timeout: 0s}\n",
			"t.yaml:3:28: server.upstream_timeout: 0s is out of range (more than 0, at most 24h; default 30s)"},
		{"delay negative", "server: {shutdown_delay: -1s}\n",
			"t.yaml:3:26: server.shutdown_delay: -1s is out of range (0 or more, at most 24h; default 0s)"},
		{"max_connections", "server: {max_connections: 0}\n",
			"t.yaml:3:27: server.max_connections: 0 is out of range (1 to 1000000; default 10000)"},
		{"unknown field", "server: {body_timout: 1s}\n",
			`t.yaml:3:10: server: unknown field "body_timout" (did you mean "body_timeout"? accepted: read_header_timeout, body_timeout, idle_timeout, upstream_timeout, max_connections, body_buffer, body_buffer_total, max_streamed_bodies, tls_handshake_timeout, max_tls_handshakes, shutdown_delay, drain_timeout)`},
		{"body_buffer zero", "server: {body_buffer: 0}\n",
			"t.yaml:3:23: server.body_buffer: 0 is out of range (1 to 16777216 bytes; default 65536)"},
		{"body_buffer_total below body_buffer", "server: {body_buffer: 4096, body_buffer_total: 1024}\n",
			"t.yaml:3:48: server.body_buffer_total: 1024 is out of range (4096 (body_buffer) to 68719476736 bytes; default 67108864)"},
		{"max_streamed_bodies", "server: {max_streamed_bodies: 1.5}\n",
			`t.yaml:3:31: server.max_streamed_bodies: "1.5" is not a whole number (1 to 1000000; default 100)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(head+tc.text+"rules: [{name: a, rate: 1/s}]\n"))
			if err == nil || err.Error() != tc.want {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}

// TestUpstreamIsListen: an upstream that is sluice's own listen address is
// refused, since every request would come back to sluice.
func TestUpstreamIsListen(t *testing.T) {
	for _, tc := range []struct {
		listen, upstream string
		loops            bool
	}{
		{"127.0.0.1:8080", "http://127.0.0.1:8080", true},
		{"127.0.0.1:8080", "http://127.0.0.1:8080/api", true},
		{"127.0.0.1:8080", "http://localhost:8080", true},
		{"localhost:8080", "http://127.0.0.1:8080", true},
		{"LocalHost:8080", "http://localhost.:8080", true},
		{"[::1]:8080", "http://localhost:8080", true},
		{"[::ffff:127.0.0.1]:8080", "http://127.0.0.1:8080", true},
		{":8080", "http://127.0.0.1:8080", true},
		{":8080", "http://127.0.0.2:8080", true},
		{":8080", "http://localhost:8080", true},
		{"0.0.0.0:8080", "http://[::1]:8080", true},
		{"[::]:8080", "http://0.0.0.0:8080", true},
		{":80", "http://localhost", true},
		{":443", "https://127.0.0.1", true},
		{"sluice.internal:8080", "http://sluice.internal:8080", true},
		{":8080", "http://" + strings.ToUpper(hostname(t)) + ":8080", true},
		{"127.0.0.1:8080", "http://127.0.0.1:9000", false},
		{"127.0.0.1:8080", "http://127.0.0.2:8080", false},
		{"127.0.0.1:8080", "http://claims.internal:8080", false},
		{":8080", "http://claims.internal:8080", false},
		{":80", "https://localhost", false},
		{"127.0.0.1:0", "http://127.0.0.1:0", false}, // port 0: chosen by the kernel, never the upstream's
	} {
		u, err := url.Parse(tc.upstream)
		if err != nil {
			t.Fatal(err)
		}
		if got := loopsToListen(tc.listen, u); got != tc.loops {
			t.Errorf("listen %s, upstream %s: loops = %v, want %v", tc.listen, tc.upstream, got, tc.loops)
		}
	}
	_, err := Parse("t.yaml", []byte("listen: 0.0.0.0:8080\nupstream: http://localhost:8080\nrules: [{name: a, rate: 1/s}]\n"))
	want := "t.yaml:2:11: upstream: http://localhost:8080 is sluice's own listen address 0.0.0.0:8080"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got  %v\nwant %s...", err, want)
	}
}

func hostname(t *testing.T) string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		t.Skip("no host name")
	}
	return name
}
