package httplimit_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/internal/testcert"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// TestClientCertificate: behind a net/http server that verifies client
// certificates, a certificate a client lists makes its caller that client
// (one request a minute, the handler told who), with no key; a certificate
// naming no client is an unknown caller (401).
func TestClientCertificate(t *testing.T) {
	ca := testcert.NewAuthority(t, "Partners CA")
	sel, err := policy.ParseCertSelector("dns:garage-a.partners.example")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Compile(policy.Policy{
		Clients: policy.Clients{List: []policy.Client{{ID: "garage-a", Certs: []policy.CertSelector{sel}}}},
		Rules: []policy.Rule{{Name: "claims", Key: policy.KeySpec{Kind: policy.KeyClient}, Algorithm: limiter.FixedWindow,
			Rate: policy.Rate{N: 1, Period: time.Minute}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := httplimit.New(httplimit.Options{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	srv := httptest.NewUnstartedServer(l.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Header.Get(httplimit.ClientHeader))
	})))
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	srv.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	get := func(cert testcert.Pair) (int, string) {
		t.Helper()
		tr := srv.Client().Transport.(*http.Transport).Clone()
		tr.TLSClientConfig.Certificates = []tls.Certificate{cert.TLS(t)}
		c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		defer c.CloseIdleConnections()
		resp, err := c.Get(srv.URL + "/claims/1")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	partner := ca.Client(t, testcert.Client{DNSNames: []string{"garage-a.partners.example"}})
	if status, body := get(partner); status != 200 || body != "garage-a" {
		t.Errorf("by certificate: %d %q, want 200 for garage-a", status, body)
	}
	if status, _ := get(partner); status != 429 {
		t.Errorf("second request by certificate: %d, want 429", status)
	}
	if status, _ := get(ca.Client(t, testcert.Client{DNSNames: []string{"stranger.example"}})); status != 401 {
		t.Errorf("a certificate naming no client: %d, want 401", status)
	}
}
