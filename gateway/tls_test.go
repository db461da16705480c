package gateway_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/gateway"
	"github.com/sluice-rl/sluice/internal/testcert"
)

// tlsHarness serves a gateway whose callers' listener speaks TLS with
// pair (written to the harness's directory), and extra under server:. Its
// client trusts pool.
func tlsHarness(t *testing.T, pair testcert.Pair, server string, pool *x509.CertPool) *harness {
	t.Helper()
	h := newHarness(t)
	cert, key := pair.Write(t, h.dir)
	return serveTLSFiles(h, cert, key, server, pool)
}

// serveTLSFiles serves h's gateway with TLS from cert and key.
func serveTLSFiles(h *harness, cert, key, server string, pool *x509.CertPool) *harness {
	t := h.t
	t.Helper()
	h.writeConfig("listen: 127.0.0.1:0\nupstream: {{UPSTREAM}}\nadmin: 127.0.0.1:0\ntls: {cert: " + cert + ", key: " + key + "}\n" +
		server + "rules:\n  - name: all\n    match: {path: /}\n    key: global\n    rate: 1000/s\n")
	h.serve()
	h.url = "https://" + strings.TrimPrefix(h.url, "http://")
	h.client = tlsClient(pool, true)
	return h
}

// tlsClient is an HTTP client trusting pool that keeps its connections
// (or not), and asks for HTTP/2 as browsers do (h2 and http/1.1 in ALPN).
func tlsClient(pool *x509.CertPool, keepAlive bool) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: true,
		DisableKeepAlives: !keepAlive,
	}}
}

// getTLS sends GET path with c and returns the response, read to its end.
func getTLS(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestTLSServe(t *testing.T) {
	pair := testcert.New(t, testcert.Options{})
	h := tlsHarness(t, pair, "", pair.Pool())
	resp, body := getTLS(t, h.client, h.url+"/claims/1")
	if resp.StatusCode != 200 || body != "upstream ok /claims/1" {
		t.Fatalf("GET = %d %q, want the upstream's answer", resp.StatusCode, body)
	}
	if resp.Proto != "HTTP/1.1" || resp.TLS == nil || resp.TLS.NegotiatedProtocol != "http/1.1" || resp.TLS.Version < tls.VersionTLS12 {
		t.Errorf("proto %s, ALPN %q, TLS version %x; want HTTP/1.1 over TLS 1.2+ (an h2 offer falls back)", resp.Proto, resp.TLS.NegotiatedProtocol, resp.TLS.Version)
	}
	if got := h.up.lastSeen(t).Header.Get("X-Forwarded-Proto"); got != "https" {
		t.Errorf("X-Forwarded-Proto = %q at the upstream, want https", got)
	}
	if r := h.admin("GET", "/healthz"); r.Status != 200 { // no admin.tls: the admin port stays plain
		t.Errorf("plain /healthz = %d", r.Status)
	}
	m := h.metrics()
	if got, want := metric(m, "sluice_tls_certificate_expiry_timestamp_seconds", "listener=callers"), float64(pair.Cert.NotAfter.Unix()); got != want {
		t.Errorf("sluice_tls_certificate_expiry_timestamp_seconds{listener=callers} = %v, want %v", got, want)
	}
	if got := metric(m, "sluice_tls_certificate_expiry_timestamp_seconds", "listener=admin"); got != -1 {
		t.Errorf("an admin listener without TLS has an expiry series: %v", got)
	}
}

// TestTLSRefusesOldAndH2Only: TLS 1.1 and a client that speaks only h2 are
// refused in the handshake, with an alert, not a hang.
func TestTLSRefusesOldAndH2Only(t *testing.T) {
	pair := testcert.New(t, testcert.Options{})
	h := tlsHarness(t, pair, "", pair.Pool())
	addr := strings.TrimPrefix(h.url, "https://")
	for _, tc := range []struct {
		name string
		conf *tls.Config
		want string
	}{
		{"TLS 1.1", &tls.Config{RootCAs: pair.Pool(), MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}, "protocol version"},
		{"h2 only", &tls.Config{RootCAs: pair.Pool(), NextProtos: []string{"h2"}}, "no application protocol"},
	} {
		d := &net.Dialer{Timeout: 5 * time.Second}
		c, err := tls.DialWithDialer(d, "tcp", addr, tc.conf)
		if err == nil {
			c.Close()
			t.Errorf("%s: handshake succeeded, want it refused", tc.name)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an alert about %s", tc.name, err, tc.want)
		}
	}
	eventually(t, "two failed handshakes counted", func() bool {
		return metric(h.metrics(), "sluice_tls_handshake_errors_total", "listener=callers", "reason=failed") == 2
	})
}

// TestTLSPlainRequest: an HTTP request in the clear on the TLS port is
// answered 400, saying the port speaks TLS, and the connection closed.
func TestTLSPlainRequest(t *testing.T) {
	pair := testcert.New(t, testcert.Options{})
	h := tlsHarness(t, pair, "", pair.Pool())
	c, err := net.Dial("tcp", strings.TrimPrefix(h.url, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET /claims HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the answer: %v (got %q)", err, got)
	}
	if !strings.HasPrefix(string(got), "HTTP/1.0 400 Bad Request\r\n") || !strings.Contains(string(got), "HTTP request to an HTTPS server") {
		t.Errorf("answer %q, want 400 saying the port speaks TLS", got)
	}
	if n := h.up.hits.Load(); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
	if got := metric(h.metrics(), "sluice_tls_handshake_errors_total", "reason=plain_http"); got != 1 {
		t.Errorf("sluice_tls_handshake_errors_total{reason=plain_http} = %v, want 1", got)
	}
}

// TestTLSRotation: new files are presented from the next handshake on, an
// open keep-alive connection goes on with its own; a bad new pair is
// refused and logged, the one in use stays.
func TestTLSRotation(t *testing.T) {
	first, second := testcert.New(t, testcert.Options{CommonName: "first"}), testcert.New(t, testcert.Options{CommonName: "second"})
	pool := first.Pool()
	pool.AddCert(second.Cert)
	h := tlsHarness(t, first, "", pool)
	kept := tlsClient(pool, true) // holds one connection throughout
	defer kept.CloseIdleConnections()
	peer := func(c *http.Client) string {
		resp, _ := getTLS(t, c, h.url+"/x")
		return resp.TLS.PeerCertificates[0].Subject.CommonName
	}
	if got := peer(kept); got != "first" {
		t.Fatalf("certificate %q, want first", got)
	}
	second.Write(t, h.dir)
	fresh := tlsClient(pool, false)
	eventually(t, "new connections get the second certificate", func() bool { return peer(fresh) == "second" })
	if got := peer(kept); got != "first" {
		t.Errorf("the kept connection's certificate is %q, want first (the same connection, kept open)", got)
	}

	// A key of another certificate: refused, the second pair stays.
	bad := testcert.New(t, testcert.Options{CommonName: "bad"})
	bad.KeyPEM = testcert.New(t, testcert.Options{}).KeyPEM
	bad.Write(t, h.dir)
	eventually(t, "the bad pair is refused in the log", func() bool { return h.logs.count(t, "new certificate files refused; the certificate in use stays") > 0 })
	if got := peer(fresh); got != "second" {
		t.Errorf("certificate %q after a bad pair, want second", got)
	}
	if got := peer(kept); got != "first" {
		t.Errorf("the kept connection's certificate is %q, want first", got)
	}
}

// TestTLSHandshakeTimeout: a connection that never handshakes is closed
// after server.tls_handshake_timeout.
func TestTLSHandshakeTimeout(t *testing.T) {
	pair := testcert.New(t, testcert.Options{})
	h := tlsHarness(t, pair, "server: {tls_handshake_timeout: 300ms}\n", pair.Pool())
	c, err := net.Dial("tcp", strings.TrimPrefix(h.url, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read = %v, want EOF: the server closes the connection", err)
	}
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Errorf("closed after %v, before the handshake timeout", took)
	}
	if got := metric(h.metrics(), "sluice_tls_handshake_errors_total", "reason=timeout"); got != 1 {
		t.Errorf("sluice_tls_handshake_errors_total{reason=timeout} = %v, want 1", got)
	}
}

// TestTLSHandshakeCap: with server.max_tls_handshakes 1, a connection
// that sends nothing holds the one handshake: the next caller's handshake
// waits until that connection's handshake timeout frees it.
func TestTLSHandshakeCap(t *testing.T) {
	pair := testcert.New(t, testcert.Options{})
	const timeout = 600 * time.Millisecond
	h := tlsHarness(t, pair, "server: {tls_handshake_timeout: 600ms, max_tls_handshakes: 1}\n", pair.Pool())
	idle, err := net.Dial("tcp", strings.TrimPrefix(h.url, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	start := time.Now()
	resp, _ := getTLS(t, tlsClient(pair.Pool(), false), h.url+"/x")
	if took := time.Since(start); resp.StatusCode != 200 || took < timeout*3/4 {
		t.Errorf("GET = %d after %v, want 200 once the idle connection's handshake slot is free (%v)", resp.StatusCode, took, timeout)
	}
}

// TestTLSAdmin: admin.tls serves the admin endpoints over TLS, here with
// the callers' files (one source for both).
func TestTLSAdmin(t *testing.T) {
	pair := testcert.New(t, testcert.Options{})
	h := newHarness(t)
	cert, key := pair.Write(t, h.dir)
	files := "{cert: " + cert + ", key: " + key + "}"
	h.writeConfig("listen: 127.0.0.1:0\nupstream: {{UPSTREAM}}\nadmin: {listen: 127.0.0.1:0, tls: " + files + "}\ntls: " + files +
		"\nrules: [{name: all, match: {path: /}, key: global, rate: 1000/s}]\n")
	h.serve()
	c := tlsClient(pair.Pool(), false)
	resp, body := getTLS(t, c, "https://"+strings.TrimPrefix(h.adminURL, "http://")+"/healthz")
	if resp.StatusCode != 200 || resp.TLS == nil || resp.Proto != "HTTP/1.1" {
		t.Errorf("admin /healthz = %d %q over %s (TLS %v), want 200 over TLS", resp.StatusCode, body, resp.Proto, resp.TLS != nil)
	}
	if resp, _ := getTLS(t, c, "https://"+strings.TrimPrefix(h.url, "http://")+"/x"); resp.StatusCode != 200 {
		t.Errorf("callers' GET = %d", resp.StatusCode)
	}
}

// TestTLSCurlAndOpenSSL: curl asking for HTTP/2 gets HTTP/1.1 over TLS,
// and openssl s_client sees ALPN http/1.1 and a verified chain.
func TestTLSCurlAndOpenSSL(t *testing.T) {
	pair := testcert.New(t, testcert.Options{})
	h := tlsHarness(t, pair, "", pair.Pool())
	caFile := filepath.Join(h.dir, "server.crt")
	addr := strings.TrimPrefix(h.url, "https://")
	curl := tool(t, "curl")
	out, err := exec.Command(curl, "-sS", "--http2", "--cacert", caFile, "-o", "/dev/null",
		"-w", "%{http_code} %{http_version}", h.url+"/claims").CombinedOutput()
	if err != nil || string(out) != "200 1.1" {
		t.Errorf("curl --http2: %v: %q, want 200 over HTTP/1.1", err, out)
	}
	openssl := tool(t, "openssl")
	cmd := exec.Command(openssl, "s_client", "-connect", addr, "-servername", "localhost", "-alpn", "h2,http/1.1", "-CAfile", caFile)
	cmd.Stdin = strings.NewReader("")
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ALPN protocol: http/1.1") || !strings.Contains(string(out), "Verify return code: 0 (ok)") {
		t.Errorf("openssl s_client: %v, want ALPN http/1.1 and a verified chain:\n%s", err, out)
	}
	cmd = exec.Command(openssl, "s_client", "-connect", addr, "-tls1_1")
	cmd.Stdin = strings.NewReader("")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("openssl s_client -tls1_1 connected, want it refused:\n%s", out)
	}
}

// tool returns the path of a command the test needs, failing (never
// skipping) without it: make deps installs it.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: this test runs it (make deps installs it: apt-get install %s)", name, name)
	}
	return p
}

// dialTLS opens a TLS connection to h's callers' listener, trusting pool.
func dialTLS(t *testing.T, h *harness, pool *x509.CertPool) *tls.Conn {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", strings.TrimPrefix(h.url, "https://"), &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestTLSSlowHeadersClosed: server.read_header_timeout holds on a TLS
// connection once it has handshaken.
func TestTLSSlowHeadersClosed(t *testing.T) {
	pair := testcert.New(t, testcert.Options{})
	h := tlsHarness(t, pair, "server: {read_header_timeout: 200ms}\n", pair.Pool())
	c := dialTLS(t, h, pair.Pool())
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET /claims/1 HTTP/1.1\r\nHost: x\r\n"); err != nil { // and never the end
		t.Fatal(err)
	}
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("the connection did not close: %v", err)
	}
	if n := h.up.hits.Load(); n != 0 {
		t.Errorf("the upstream received %d requests", n)
	}
}

// TestTLSBareLFHeaderEnd: the header watch (a block ended by a bare LF is
// refused at once) reads the decrypted bytes.
func TestTLSBareLFHeaderEnd(t *testing.T) {
	pair := testcert.New(t, testcert.Options{})
	h := tlsHarness(t, pair, "server: {read_header_timeout: 1m}\n", pair.Pool())
	c := dialTLS(t, h, pair.Pool())
	_ = c.SetDeadline(time.Now().Add(20 * time.Second)) // a bound only: the minute's 408 would come later
	if _, err := io.WriteString(c, "GET /claims/1 HTTP/1.1\nHost: x\n\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("status %d, want 400", resp.StatusCode)
	}
}

// TestTLSCallerThatReadsNothingIsDropped: a TLS caller that reads nothing
// of a large answer loses its connection after server.idle_timeout, and
// the upstream connection with it.
func TestTLSCallerThatReadsNothingIsDropped(t *testing.T) {
	stopped := make(chan error, 1)
	pair := testcert.New(t, testcert.Options{})
	h := newHarness(t)
	h.up = &upstream{srv: httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 64<<10))
		for {
			if _, err := w.Write(chunk); err != nil {
				stopped <- err
				return
			}
		}
	}))}
	defer h.up.srv.Close()
	cert, key := pair.Write(t, h.dir)
	serveTLSFiles(h, cert, key, "server: {idle_timeout: 500ms}\n", pair.Pool())
	raw, err := net.Dial("tcp", strings.TrimPrefix(h.url, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	_ = raw.(*net.TCPConn).SetReadBuffer(4 << 10)
	c := tls.Client(raw, &tls.Config{RootCAs: pair.Pool(), ServerName: "127.0.0.1"})
	defer c.Close()
	if _, err := io.WriteString(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	case <-time.After(15 * time.Second):
		t.Fatal("a TLS caller reading nothing still held its connection and the upstream's after 15s")
	}
}

// TestTLSConnectionCap: server.max_connections counts TLS connections, a
// handshaking one included: with one open, the next handshake waits
// until it closes.
func TestTLSConnectionCap(t *testing.T) {
	pair := testcert.New(t, testcert.Options{})
	h := tlsHarness(t, pair, "server: {max_connections: 1}\n", pair.Pool())
	first := dialTLS(t, h, pair.Pool())
	done := make(chan error, 1)
	go func() {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", strings.TrimPrefix(h.url, "https://"), &tls.Config{RootCAs: pair.Pool()})
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a second handshake completed (%v) while the one connection allowed was open", err)
	case <-time.After(300 * time.Millisecond):
	}
	first.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the second handshake, once the first connection closed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second handshake did not complete after the first connection closed")
	}
}

// TestTLSSecretSwap: a Kubernetes secret volume's update (the files are
// links through "..data", which is swapped to a new directory) is followed.
func TestTLSSecretSwap(t *testing.T) {
	first, second := testcert.New(t, testcert.Options{CommonName: "first"}), testcert.New(t, testcert.Options{CommonName: "second"})
	pool := first.Pool()
	pool.AddCert(second.Cert)
	h := newHarness(t)
	vol := filepath.Join(h.dir, "tls")
	version := func(name string, p testcert.Pair) {
		dir := filepath.Join(vol, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		p.Write(t, dir)
		if err := os.Symlink(name, filepath.Join(vol, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(vol, "..data_tmp"), filepath.Join(vol, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..2026_12_01_a", first)
	for _, f := range []string{"server.crt", "server.key"} {
		if err := os.Symlink(filepath.Join("..data", f), filepath.Join(vol, f)); err != nil {
			t.Fatal(err)
		}
	}
	serveTLSFiles(h, filepath.Join(vol, "server.crt"), filepath.Join(vol, "server.key"), "", pool)
	peer := func() string {
		resp, _ := getTLS(t, tlsClient(pool, false), h.url+"/x")
		return resp.TLS.PeerCertificates[0].Subject.CommonName
	}
	if got := peer(); got != "first" {
		t.Fatalf("certificate %q, want first", got)
	}
	version("..2026_12_02_b", second)
	eventually(t, "the swapped secret's certificate presented", func() bool { return peer() == "second" })
}

// TestTLSReloadKeepsListener: a reload that names other certificate files
// logs that a restart is needed and keeps the files in use; the rest of
// the file (here the rule's rate) is reloaded.
func TestTLSReloadKeepsListener(t *testing.T) {
	first, other := testcert.New(t, testcert.Options{CommonName: "first"}), testcert.New(t, testcert.Options{CommonName: "other"})
	pool := first.Pool()
	pool.AddCert(other.Cert)
	h := tlsHarness(t, first, "", pool)
	dir := filepath.Join(h.dir, "other")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cert, key := other.Write(t, dir)
	h.writeConfig("listen: 127.0.0.1:0\nupstream: {{UPSTREAM}}\nadmin: 127.0.0.1:0\ntls: {cert: " + cert + ", key: " + key + "}\n" +
		"rules:\n  - name: all\n    match: {path: /}\n    key: global\n    rate: 1/m\n")
	if err := h.g.Reload(); err != nil {
		t.Fatal(err)
	}
	if h.logs.count(t, "tls and admin.tls changes take effect after a restart (the files' contents are followed)") == 0 {
		t.Error("no log line saying the tls change needs a restart")
	}
	c := tlsClient(pool, false)
	resp, _ := getTLS(t, c, h.url+"/x")
	if got := resp.TLS.PeerCertificates[0].Subject.CommonName; got != "first" {
		t.Errorf("certificate %q after the reload, want first (the files in use)", got)
	}
	if resp, _ := getTLS(t, c, h.url+"/x"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("second request under the reloaded 1/m = %d, want 429", resp.StatusCode)
	}
}

// TestTLSH2PrefaceRefused: a client that negotiates http/1.1 and then
// speaks HTTP/2 anyway (its connection preface) is answered 400, as on a
// plain listener; nothing reaches the upstream.
func TestTLSH2PrefaceRefused(t *testing.T) {
	pair := testcert.New(t, testcert.Options{})
	h := tlsHarness(t, pair, "", pair.Pool())
	c := dialTLS(t, h, pair.Pool())
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("status %d, want 400", resp.StatusCode)
	}
	if n := h.up.hits.Load(); n != 0 {
		t.Errorf("the upstream received %d requests", n)
	}
}

// TestTLSShutdownEndsHandshakes: a connection that never handshakes does
// not hold up a shutdown for server.tls_handshake_timeout.
func TestTLSShutdownEndsHandshakes(t *testing.T) {
	pair := testcert.New(t, testcert.Options{})
	h := tlsHarness(t, pair, "server: {tls_handshake_timeout: 1m}\n", pair.Pool())
	c, err := net.Dial("tcp", strings.TrimPrefix(h.url, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if resp, _ := getTLS(t, h.client, h.url+"/x"); resp.StatusCode != 200 { // the idle one was accepted first
		t.Fatalf("GET = %d", resp.StatusCode)
	}
	start := time.Now()
	h.stop() // fails the test if Run does not return nil
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("shutdown took %v with a handshake pending", took)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the pending connection: %v, want EOF (closed by the shutdown)", err)
	}
}

// TestTLSConnectionParked: an idle TLS keep-alive connection is parked
// (its socket alone, its TLS state kept) and served again, still TLS, when
// its next request comes, again and again; the idle timeout still closes
// it, counted from its last answer.
func TestTLSConnectionParked(t *testing.T) {
	defer gateway.SetParkWaits(10*time.Millisecond, 50*time.Millisecond)()
	pair := testcert.New(t, testcert.Options{})
	h := tlsHarness(t, pair, "server: {idle_timeout: 700ms}\n", pair.Pool())
	c := dialTLS(t, h, pair.Pool())
	k := &keepAlive{c: c, br: bufio.NewReader(c)}
	var answered time.Time // the last answer's: the server's idle timeout runs from a moment before
	for i := range 3 {
		if got := k.send(t, "GET /claims/"+strconv.Itoa(i)+" HTTP/1.1\r\nHost: x\r\n\r\n", 1); got[0] != 200 {
			t.Fatalf("request %d on the TLS connection: %d, want 200", i, got[0])
		}
		answered = time.Now()
		if got := h.up.lastSeen(t); got.Path != "/claims/"+strconv.Itoa(i) || got.Header.Get("X-Forwarded-Proto") != "https" {
			t.Errorf("request %d at the upstream: %s, X-Forwarded-Proto %q; want it, https", i, got.Path, got.Header.Get("X-Forwarded-Proto"))
		}
		eventually(t, "parked", func() bool { return metric(h.metrics(), "sluice_parked_connections") == 1 })
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := k.br.ReadByte(); err == nil {
		t.Fatal("read a byte from an idle parked TLS connection, want it closed at the idle timeout")
	}
	if d := time.Since(answered); d < 600*time.Millisecond {
		t.Errorf("closed %v after its last answer, before the idle timeout (700ms)", d)
	}
	eventually(t, "none parked", func() bool { return metric(h.metrics(), "sluice_parked_connections") == 0 })
}

// parkedTLS serves a gateway on TLS with server (a server: line), sends
// one request on a TLS connection and waits until it is parked; it returns
// the socket under the connection's client side.
func parkedTLS(t *testing.T, server string) net.Conn {
	t.Helper()
	pair := testcert.New(t, testcert.Options{})
	h := tlsHarness(t, pair, server, pair.Pool())
	raw, err := net.Dial("tcp", strings.TrimPrefix(h.url, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	c := tls.Client(raw, &tls.Config{RootCAs: pair.Pool(), ServerName: "127.0.0.1"})
	k := &keepAlive{c: c, br: bufio.NewReader(c)}
	if got := k.send(t, getOne, 1); got[0] != 200 {
		t.Fatalf("request: %d, want 200", got[0])
	}
	eventually(t, "parked", func() bool { return metric(h.metrics(), "sluice_parked_connections") == 1 })
	return raw
}

// TestTLSParkedPartialRecord: a parked TLS connection woken by the start
// of a record that never completes (no request ever reaches the server)
// is closed within the header timeout, as a plain one woken by part of a
// request line is: trickling such bytes does not keep it open.
func TestTLSParkedPartialRecord(t *testing.T) {
	defer gateway.SetParkWaits(10*time.Millisecond, 50*time.Millisecond)()
	raw := parkedTLS(t, "server: {idle_timeout: 30s, read_header_timeout: 400ms}\n")
	if _, err := raw.Write([]byte{23, 3, 3}); err != nil { // an application data record's header, cut short
		t.Fatal(err)
	}
	sent := time.Now()
	_ = raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, raw); err != nil {
		t.Fatalf("reading the connection to its end: %v, want it closed by the server", err)
	}
	if d := time.Since(sent); d > 3*time.Second {
		t.Errorf("closed %v after the cut record, want within the header timeout (400ms)", d)
	}
}

// TestTLSParkedCloseNotify: a parked TLS connection closed at its idle
// timeout ends its session with close_notify (an alert record before the
// end of the stream), as one closed in its goroutine does, so that clients
// that insist on it (OpenSSL, Python) see a clean end, not a truncation.
func TestTLSParkedCloseNotify(t *testing.T) {
	defer gateway.SetParkWaits(10*time.Millisecond, 50*time.Millisecond)()
	raw := parkedTLS(t, "server: {idle_timeout: 500ms}\n")
	_ = raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(raw) // under the TLS client: what the server sent after the answer
	if err != nil {
		t.Fatalf("reading the connection to its end: %v", err)
	}
	if len(rest) < 5 || rest[0] != 23 && rest[0] != 21 { // TLS 1.3 sends the alert as application data
		t.Errorf("the server sent %d bytes before closing (% x), want a close_notify record", len(rest), rest)
	}
}

// TestTLSParkedConnectionHoldsItsSlot: a parked TLS connection keeps its
// place under server.max_connections (a second caller waits in the
// backlog, not even handshaken), woken it is served in it still, and its
// caller closing it while parked gives the place to the one waiting.
func TestTLSParkedConnectionHoldsItsSlot(t *testing.T) {
	defer gateway.SetParkAfter(50 * time.Millisecond)()
	pair := testcert.New(t, testcert.Options{})
	h := tlsHarness(t, pair, "server: {idle_timeout: 30s, max_connections: 1}\n", pair.Pool())
	c := dialTLS(t, h, pair.Pool())
	k := &keepAlive{c: c, br: bufio.NewReader(c)}
	k.send(t, getOne, 1)
	eventually(t, "parked", func() bool { return metric(h.metrics(), "sluice_parked_connections") == 1 })
	handshaken := make(chan *tls.Conn, 1)
	go func() {
		o, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", strings.TrimPrefix(h.url, "https://"), &tls.Config{RootCAs: pair.Pool()})
		if err != nil {
			t.Errorf("the waiting caller's handshake: %v", err)
			o = nil
		}
		handshaken <- o
	}()
	select {
	case <-handshaken:
		t.Fatal("a second TLS caller was handshaken under max_connections 1 while the first was parked")
	case <-time.After(300 * time.Millisecond):
	}
	if got := k.send(t, getOne, 1); got[0] != http.StatusOK { // woken, in its slot still
		t.Fatalf("the parked connection woken: %v", got)
	}
	eventually(t, "parked again", func() bool { return metric(h.metrics(), "sluice_parked_connections") == 1 })
	c.Close()
	var o *tls.Conn
	select {
	case o = <-handshaken:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting caller not served once the parked connection closed")
	}
	if o == nil {
		return
	}
	defer o.Close()
	w := &keepAlive{c: o, br: bufio.NewReader(o)}
	if got := w.send(t, getOne, 1); got[0] != http.StatusOK {
		t.Errorf("the waiting caller's request: %v", got)
	}
}
