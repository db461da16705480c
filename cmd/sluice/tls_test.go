package main

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/testcert"
)

// tlsConfigText is serveConfigText with a tls block naming cert and key.
func tlsConfigText(upstream, cert, key string) string {
	return serveConfigText(upstream, "100/m") + "tls: {cert: " + cert + ", key: " + key + "}\n"
}

// TestCheckTLS: check names the certificate in its summary, and refuses
// an expired one with its position.
func TestCheckTLS(t *testing.T) {
	dir := t.TempDir()
	pair := testcert.New(t, testcert.Options{CommonName: "claims.example.test"})
	cert, key := pair.Write(t, dir)
	path := filepath.Join(dir, "sluice.yaml")
	replace(t, path, tlsConfigText("http://127.0.0.1:9000", cert, key))
	var out, errs strings.Builder
	if code := run([]string{"check", "--config", path}, &out, &errs); code != 0 {
		t.Fatalf("check = %d: %s", code, errs.String())
	}
	for _, want := range []string{"tls: TLS 1.2+ (ALPN http/1.1 only), certificate " + cert + " (CN=claims.example.test)",
		"names dns:localhost, ip:127.0.0.1", "expires " + pair.Cert.NotAfter.UTC().Format(time.RFC3339)} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("check's summary lacks %q:\n%s", want, out.String())
		}
	}

	old := filepath.Join(dir, "old")
	if err := os.Mkdir(old, 0o700); err != nil {
		t.Fatal(err)
	}
	oldCert, oldKey := testcert.New(t, testcert.Options{NotBefore: time.Now().Add(-72 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)}).Write(t, old)
	replace(t, path, tlsConfigText("http://127.0.0.1:9000", oldCert, oldKey))
	out.Reset()
	errs.Reset()
	if code := run([]string{"check", "--config", path}, &out, &errs); code != 1 || !strings.Contains(errs.String(), path+":13:13: tls.cert: "+oldCert+": the certificate expired on") {
		t.Errorf("check of an expired certificate = %d: %s", code, errs.String())
	}
}

// TestServeTLS: `sluice serve` with a tls block serves callers over TLS
// and follows the certificate files.
func TestServeTLS(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok " + r.Header.Get("X-Forwarded-Proto")))
	}))
	defer up.Close()
	dir := t.TempDir()
	first, second := testcert.New(t, testcert.Options{CommonName: "first"}), testcert.New(t, testcert.Options{CommonName: "second"})
	cert, key := first.Write(t, dir)
	path := filepath.Join(dir, "sluice.yaml")
	replace(t, path, tlsConfigText(up.URL, cert, key))
	p := startServe(t, path)
	pool := first.Pool()
	pool.AddCert(second.Cert)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: true, DisableKeepAlives: true}}
	get := func() (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+p.listen+"/claims", nil)
		req.Header.Set("X-API-Key", "cmd-secret-key-a-91c2")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := get()
	if resp.StatusCode != 200 || body != "ok https" || resp.Proto != "HTTP/1.1" || resp.TLS.PeerCertificates[0].Subject.CommonName != "first" {
		t.Fatalf("GET = %d %q over %s, want the upstream's answer over HTTP/1.1 and TLS", resp.StatusCode, body, resp.Proto)
	}
	second.Write(t, dir)
	poll(t, "the second certificate presented", func() bool {
		resp, _ := get()
		return resp.TLS.PeerCertificates[0].Subject.CommonName == "second"
	})
	p.terminate(t, 10*time.Second)
}
