package gateway_test

import (
	"bufio"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/gateway"
	"github.com/sluice-rl/sluice/internal/testcert"
)

// partners is a gateway whose callers' listener verifies client
// certificates against the authority ca: partner-dns, partner-uri,
// partner-cn and partner-sum are named by their certificates (each kind of
// selector), partner-dns and partner-key also by a key; 2 requests a
// minute each on /claims.
type partners struct {
	*harness
	server testcert.Pair
	ca     *testcert.Authority
	certs  map[string]testcert.Pair // by client id; "stranger" is the authority's, naming no client
}

const partnersClients = `clients:
  unknown: reject
  list:
    - {id: partner-dns, keys: [key-dns], certs: ["dns:garage-a.partners.example"]}
    - {id: partner-uri, certs: ["uri:spiffe://partners/garage-b"]}
    - {id: partner-cn, certs: ["cn:Garage C"]}
    - {id: partner-sum, certs: ["sha256:{{SUM}}"]}
    - {id: partner-key, keys: [key-k]}
`

func startPartners(t *testing.T, clientAuth string) *partners {
	t.Helper()
	p := &partners{harness: newHarness(t), server: testcert.New(t, testcert.Options{}), ca: testcert.NewAuthority(t, "Partners CA")}
	p.certs = map[string]testcert.Pair{
		"partner-dns": p.ca.Client(t, testcert.Client{CommonName: "whoever", DNSNames: []string{"garage-a.partners.example"}}),
		"partner-uri": p.ca.Client(t, testcert.Client{CommonName: "Garage C", URIs: []string{"spiffe://partners/garage-b"}}), // the URI comes first
		"partner-cn":  p.ca.Client(t, testcert.Client{CommonName: "Garage C"}),
		"partner-sum": p.ca.Client(t, testcert.Client{CommonName: "Garage C", DNSNames: []string{"garage-a.partners.example"}}), // the fingerprint comes first
		"stranger":    p.ca.Client(t, testcert.Client{CommonName: "Stranger", DNSNames: []string{"stranger.example"}}),
	}
	p.server.Write(t, p.dir)
	if err := os.WriteFile(filepath.Join(p.dir, "partners.pem"), p.ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	p.writeConfig(p.config(clientAuth, partnersClients))
	p.serve()
	p.url = "https://" + strings.TrimPrefix(p.url, "http://")
	return p
}

// config is the partners' file with clients.
func (p *partners) config(clientAuth, clients string) string {
	sum := sha256.Sum256(p.certs["partner-sum"].Cert.Raw)
	hexSum := strings.ToUpper(fmt.Sprintf("% x", sum[:]))
	clients = strings.ReplaceAll(clients, "{{SUM}}", strings.ReplaceAll(hexSum, " ", ":"))
	return "listen: 127.0.0.1:0\nupstream: {{UPSTREAM}}\nadmin: 127.0.0.1:0\n" +
		"tls: {cert: server.crt, key: server.key, client_ca: partners.pem" + clientAuth + "}\n" + clients +
		"rules:\n  - {name: claims, match: {path: /claims}, key: client, algorithm: fixed_window, rate: 2/m}\n" +
		"access_log: {path: access.log}\n"
}

// client is an HTTP client presenting cert (none: the zero Pair) that
// keeps its connection. It presents cert whatever authorities the server
// names (a tls.Config's Certificates would send none of another's).
func (p *partners) client(t *testing.T, cert testcert.Pair) *http.Client {
	conf := &tls.Config{RootCAs: p.server.Pool()}
	if cert.Cert != nil {
		c := cert.TLS(t)
		conf.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: conf}}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// send GETs path with c and key ("" for none); the status, or 0 and the
// error when there is no answer.
func send(t *testing.T, c *http.Client, url, key string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

// TestClientCertIdentity: under client_auth: optional, a certificate of
// each kind of selector makes its caller that client (exactly 2 of 3
// requests pass under its limit, the upstream told which client); a
// caller without a certificate is identified by its key as without TLS; a
// certificate and another client's key get 400; a certificate naming no
// client, without a key, 401; the access log names each certificate by
// its selector or fingerprint, never its bytes.
func TestClientCertIdentity(t *testing.T) {
	p := startPartners(t, "")
	for _, id := range []string{"partner-dns", "partner-uri", "partner-cn", "partner-sum"} {
		c := p.client(t, p.certs[id])
		var got []int
		for range 3 {
			status, body, err := send(t, c, p.url+"/claims/1", "")
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			got = append(got, status)
			if status == 200 && body != "upstream ok /claims/1" {
				t.Errorf("%s: body %q", id, body)
			}
		}
		if fmt.Sprint(got) != "[200 200 429]" {
			t.Errorf("%s by its certificate: statuses %v, want [200 200 429]: 2 of 3 under its own 2/m", id, got)
		}
		if who := p.up.lastSeen(t).Header.Get("X-Sluice-Client"); who != id {
			t.Errorf("%s: the upstream got X-Sluice-Client %q", id, who)
		}
	}
	for _, tc := range []struct {
		name, cert, key string
		status          int
		body            string
	}{
		{"no certificate, a key", "", "key-k", 200, "upstream ok"},
		{"no certificate, no key", "", "", 401, "missing or unknown access key in X-API-Key"},
		{"certificate and its client's key", "partner-dns", "key-dns", 429, "partner-dns"}, // its 2 went by certificate: one counter
		{"certificate and another client's key", "partner-dns", "key-k", 400,
			"the client certificate names client partner-dns and the access key in X-API-Key client partner-key: they disagree"},
		{"unknown certificate, no key", "stranger", "", 401, "the client certificate names no client, and no known access key is in X-API-Key"},
		{"unknown certificate, a key", "stranger", "key-k", 200, "upstream ok"},
	} {
		status, body, err := send(t, p.client(t, p.certs[tc.cert]), p.url+"/claims/2", tc.key)
		if err != nil || status != tc.status || !strings.Contains(body, tc.body) {
			t.Errorf("%s: %d %q, %v; want %d with %q", tc.name, status, body, err, tc.status, tc.body)
		}
	}
	lines := accessLines(t, p.harness)
	certs := map[string]bool{}
	for _, l := range lines {
		if c, ok := l["cert"].(string); ok {
			certs[c] = true
		}
		for _, v := range l {
			if s, ok := v.(string); ok && strings.Contains(s, "BEGIN") {
				t.Errorf("access log line holds certificate bytes: %v", l)
			}
		}
	}
	strangerSum := sha256.Sum256(p.certs["stranger"].Cert.Raw)
	for _, want := range []string{"dns:garage-a.partners.example", "uri:spiffe://partners/garage-b", "cn:Garage C",
		fmt.Sprintf("sha256:%x", sha256.Sum256(p.certs["partner-sum"].Cert.Raw)), fmt.Sprintf("sha256:%x", strangerSum)} {
		if !certs[want] {
			t.Errorf("no access log line has cert %q (got %v)", want, certs)
		}
	}
	if n := len(lines); n != 18 {
		t.Errorf("%d access log lines, want 18", n)
	}
}

// handshakeFails reports whether a request presenting cert fails in the
// TLS handshake (a TLS 1.3 client learns of it at its first read: no
// answer either way).
func handshakeFails(t *testing.T, p *partners, cert testcert.Pair) bool {
	t.Helper()
	status, body, err := send(t, p.client(t, cert), p.url+"/claims/1", "")
	if err == nil {
		t.Logf("answered %d %q", status, body)
	}
	return err != nil
}

// TestClientCertRequire: under client_auth: require, a caller without a
// certificate, with one of another authority, or with an expired one
// fails its handshake, each counted as reason client_certificate; a
// good certificate passes.
func TestClientCertRequire(t *testing.T) {
	p := startPartners(t, ", client_auth: require")
	other := testcert.NewAuthority(t, "Another CA").Client(t, testcert.Client{DNSNames: []string{"garage-a.partners.example"}})
	expired := p.ca.Client(t, testcert.Client{DNSNames: []string{"garage-a.partners.example"},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	for name, cert := range map[string]testcert.Pair{"no certificate": {}, "another authority's": other, "expired": expired} {
		if !handshakeFails(t, p, cert) {
			t.Errorf("%s: answered, want the handshake refused", name)
		}
	}
	eventually(t, "three failed client certificates counted", func() bool {
		return metric(p.metrics(), "sluice_tls_handshake_errors_total", "listener=callers", "reason=client_certificate") == 3
	})
	if got := metric(p.metrics(), "sluice_tls_handshake_errors_total", "listener=callers", "reason=failed"); got != 0 {
		t.Errorf("reason=failed = %v, want 0", got)
	}
	if status, _, err := send(t, p.client(t, p.certs["partner-dns"]), p.url+"/claims/1", ""); err != nil || status != 200 {
		t.Errorf("a good certificate: %d, %v; want 200", status, err)
	}
	if n := p.up.hits.Load(); n != 1 {
		t.Errorf("the upstream got %d requests, want 1", n)
	}
}

// TestClientCertOptionalWrongCA: under client_auth: optional, a
// certificate that does not verify still fails the handshake (a caller
// that presents one must present a good one); a Go client that would
// send it only to its own authority sends none and is 401.
func TestClientCertOptionalWrongCA(t *testing.T) {
	p := startPartners(t, "")
	other := testcert.NewAuthority(t, "Another CA").Client(t, testcert.Client{DNSNames: []string{"garage-a.partners.example"}})
	if !handshakeFails(t, p, other) {
		t.Error("another authority's certificate: answered, want the handshake refused")
	}
	eventually(t, "the failed client certificate counted", func() bool {
		return metric(p.metrics(), "sluice_tls_handshake_errors_total", "listener=callers", "reason=client_certificate") == 1
	})

	// A Go client holding that certificate in tls.Config.Certificates
	// sends none, as the listener names only its own authority: it is a
	// caller without a certificate (and without a key, 401), as
	// docs/security.md says.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: p.server.Pool(), Certificates: []tls.Certificate{other.TLS(t)}}}}
	t.Cleanup(c.CloseIdleConnections)
	if status, body, err := send(t, c, p.url+"/claims/1", ""); err != nil || status != 401 {
		t.Errorf("another authority's certificate in tls.Config.Certificates: %d %q, %v; want 401 (sent no certificate)", status, body, err)
	}
}

// TestClientCertRevokedByReload: a reload that removes a client's
// certificate refuses the next request on a connection opened before it,
// 401: the certificate is matched at each request, not at the handshake.
func TestClientCertRevokedByReload(t *testing.T) {
	p := startPartners(t, "")
	conf := &tls.Config{RootCAs: p.server.Pool(), Certificates: []tls.Certificate{p.certs["partner-dns"].TLS(t)}}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", strings.TrimPrefix(p.url, "https://"), conf)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(conn)
	ask := func() (int, string) {
		t.Helper()
		if _, err := io.WriteString(conn, "GET /claims/1 HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("no answer on the kept connection: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	if status, body := ask(); status != 200 {
		t.Fatalf("before the reload: %d %q", status, body)
	}
	p.writeConfig(p.config("", strings.Replace(partnersClients, `, certs: ["dns:garage-a.partners.example"]`, "", 1)))
	if r := p.admin("POST", "/reload"); r.Status != 200 {
		t.Fatalf("POST /reload: %d %s", r.Status, r.Body)
	}
	if status, body := ask(); status != 401 || !strings.Contains(body, "the client certificate names no client") {
		t.Errorf("after the reload, the same connection: %d %q, want 401", status, body)
	}
}

// TestClientCARotation: a new client_ca file verifies from the next
// handshake on: the old authority's certificates fail, the new one's pass.
func TestClientCARotation(t *testing.T) {
	p := startPartners(t, ", client_auth: require")
	next := testcert.NewAuthority(t, "Partners CA 2")
	tmp := filepath.Join(p.dir, "partners.pem.tmp")
	replaceCA := func() {
		if err := os.WriteFile(tmp, next.CertPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(p.dir, "partners.pem")); err != nil {
			t.Fatal(err)
		}
	}
	replaceCA()
	// The watch may begin after the first rename (Run starts it on its own
	// goroutine): rename again every half second, longer than the watch's
	// debounce, until it has been seen.
	tries := 0
	eventually(t, "the new client_ca in use", func() bool {
		if tries++; tries%25 == 0 {
			replaceCA()
		}
		return p.logs.count(t, "client_ca re-read") > 0
	})
	if !handshakeFails(t, p, p.certs["partner-dns"]) {
		t.Error("the old authority's certificate: answered, want the handshake refused")
	}
	cert := next.Client(t, testcert.Client{DNSNames: []string{"garage-a.partners.example"}})
	if status, _, err := send(t, p.client(t, cert), p.url+"/claims/1", ""); err != nil || status != 200 {
		t.Errorf("the new authority's certificate: %d, %v; want 200", status, err)
	}
}

// TestClientCertCurl: curl --cert and openssl s_client -cert are
// identified as the certificate's client; without --cert under require
// curl gets no answer.
func TestClientCertCurl(t *testing.T) {
	p := startPartners(t, ", client_auth: require")
	cert := p.certs["partner-cn"]
	certFile, keyFile := filepath.Join(p.dir, "cn.crt"), filepath.Join(p.dir, "cn.key")
	for f, data := range map[string][]byte{certFile: cert.CertPEM, keyFile: cert.KeyPEM} {
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	curl := tool(t, "curl")
	out, err := exec.Command(curl, "-sS", "--cacert", filepath.Join(p.dir, "server.crt"), "--cert", certFile, "--key", keyFile,
		"-o", "/dev/null", "-w", "%{http_code}", p.url+"/claims/1").CombinedOutput()
	if err != nil || string(out) != "200" {
		t.Errorf("curl --cert: %v: %q, want 200", err, out)
	}
	if who := p.up.lastSeen(t).Header.Get("X-Sluice-Client"); who != "partner-cn" {
		t.Errorf("X-Sluice-Client %q, want partner-cn", who)
	}
	if out, err := exec.Command(curl, "-sS", "--cacert", filepath.Join(p.dir, "server.crt"), p.url+"/claims/1").CombinedOutput(); err == nil {
		t.Errorf("curl without --cert under require: %q, want no answer", out)
	}

	// openssl s_client -cert: the same client, its second request of 2 a
	// minute passes, the third is refused.
	openssl := tool(t, "openssl")
	addr := strings.TrimPrefix(p.url, "https://")
	for _, want := range []string{"HTTP/1.1 200 ", "HTTP/1.1 429 "} {
		cmd := exec.Command(openssl, "s_client", "-quiet", "-connect", addr, "-servername", "localhost",
			"-CAfile", filepath.Join(p.dir, "server.crt"), "-verify_return_error", "-cert", certFile, "-key", keyFile)
		cmd.Stdin = strings.NewReader("GET /claims/2 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("openssl s_client -cert: %v, want %q in:\n%s", err, want, out)
		}
	}
	if who := p.up.lastSeen(t).Header.Get("X-Sluice-Client"); who != "partner-cn" {
		t.Errorf("X-Sluice-Client %q after openssl s_client -cert, want partner-cn", who)
	}
}

// TestClientCertParked: a TLS connection parked between its requests keeps
// the client its certificate named: woken, its next requests are that
// client's, counted under its limit.
func TestClientCertParked(t *testing.T) {
	defer gateway.SetParkWaits(10*time.Millisecond, 50*time.Millisecond)()
	p := startPartners(t, "")
	c := p.client(t, p.certs["partner-dns"])
	for i, want := range []int{200, 200, 429} {
		status, _, err := send(t, c, p.url+"/claims/1", "")
		if err != nil || status != want {
			t.Fatalf("request %d: %d, %v; want %d", i, status, err, want)
		}
		if who := p.up.lastSeen(t).Header.Get("X-Sluice-Client"); i < 2 && who != "partner-dns" {
			t.Errorf("request %d: the upstream got X-Sluice-Client %q, want partner-dns", i, who)
		}
		eventually(t, "parked", func() bool { return metric(p.metrics(), "sluice_parked_connections") == 1 })
	}
	if n := len(accessLines(t, p.harness)); n != 3 {
		t.Errorf("%d access log lines, want 3", n)
	}
}
