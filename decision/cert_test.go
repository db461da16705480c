package decision_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// certPolicy: partner-a by key and by DNS name, partner-b by key and by
// common name, a certificate-only partner-c by URI; one request a minute
// each on /claims, counted by client.
func certPolicy(t *testing.T, unknown policy.Unknown) *policy.Compiled {
	t.Helper()
	sel := func(s string) policy.CertSelector {
		v, err := policy.ParseCertSelector(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	c, err := policy.Compile(policy.Policy{
		Clients: policy.Clients{Unknown: unknown, List: []policy.Client{
			{ID: "partner-a", Keys: []string{"key-a"}, Certs: []policy.CertSelector{sel("dns:a.partners.example")}},
			{ID: "partner-b", Keys: []string{"key-b"}, Certs: []policy.CertSelector{sel("cn:Partner B"), sel("dns:b.partners.example")}},
			{ID: "partner-c", Certs: []policy.CertSelector{sel("uri:spiffe://partners/c")}},
		}},
		Rules: []policy.Rule{{Name: "claims", Match: policy.Match{Path: "/claims"}, Key: policy.KeySpec{Kind: policy.KeyClient},
			Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 1, Period: time.Minute}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCertIdentity: the certificate names the caller, a key must agree
// with it, an unknown certificate is an unknown caller; Report.Cert names
// the certificate by the selector that matched, else by its fingerprint.
func TestCertIdentity(t *testing.T) {
	certA := &policy.PeerCert{SHA256: strings.Repeat("a", 64), DNS: []string{"a.partners.example"}, CN: "whatever"}
	certB := &policy.PeerCert{SHA256: strings.Repeat("b", 64), CN: "Partner B"}
	certC := &policy.PeerCert{SHA256: strings.Repeat("c", 64), URIs: []string{"spiffe://partners/c"}}
	stranger := &policy.PeerCert{SHA256: strings.Repeat("d", 64), DNS: []string{"x.example"}, CN: "X"}
	uriFirst := &policy.PeerCert{SHA256: strings.Repeat("e", 64), DNS: []string{"a.partners.example"}, URIs: []string{"spiffe://partners/c"}}
	twoClients := &policy.PeerCert{SHA256: strings.Repeat("f", 64), DNS: []string{"a.partners.example", "b.partners.example"}}
	reject, anon := certPolicy(t, policy.UnknownReject), certPolicy(t, policy.UnknownAnonymous)
	for _, tc := range []struct {
		name           string
		pol            *policy.Compiled
		cert           *policy.PeerCert
		key            []string
		status         int
		client, logged string
		detail         string
	}{
		{"certificate alone", reject, certA, nil, 0, "partner-a", "dns:a.partners.example", ""},
		{"certificate and its client's key", reject, certB, []string{"key-b"}, 0, "partner-b", "cn:Partner B", ""},
		{"certificate-only client", reject, certC, nil, 0, "partner-c", "uri:spiffe://partners/c", ""},
		{"certificate and another client's key", reject, certA, []string{"key-b"}, 400, "unknown", "dns:a.partners.example",
			"the client certificate names client partner-a and the access key in X-API-Key client partner-b: they disagree (send partner-a's key, or none)"},
		{"certificate and a key of nobody", reject, certA, []string{"key-zz"}, 400, "unknown", "dns:a.partners.example",
			"the client certificate names client partner-a, and the access key in X-API-Key is no client's (send partner-a's key, or none)"},
		{"certificate and a key sent twice", reject, certA, []string{"key-a", "key-a"}, 400, "unknown", "dns:a.partners.example",
			"X-API-Key sent 2 times (send one access key, once)"},
		{"a URI before a DNS name", reject, uriFirst, nil, 0, "partner-c", "uri:spiffe://partners/c", ""},
		{"certificate naming two clients", reject, twoClients, nil, 400, "unknown", "dns:a.partners.example",
			"the client certificate names two clients, partner-a (dns:a.partners.example) and partner-b (a certificate names one client)"},
		{"unknown certificate, no key, reject", reject, stranger, nil, 401, "unknown", "sha256:" + stranger.SHA256,
			"the client certificate names no client, and no known access key is in X-API-Key"},
		{"unknown certificate and a key", reject, stranger, []string{"key-b"}, 0, "partner-b", "sha256:" + stranger.SHA256, ""},
		{"unknown certificate, no key, anonymous", anon, stranger, nil, 0, "anonymous", "sha256:" + stranger.SHA256, ""},
		{"no certificate, a key", reject, nil, []string{"key-a"}, 0, "partner-a", "", ""},
		{"no certificate, no key", reject, nil, nil, 401, "unknown", "", "missing or unknown access key in X-API-Key"},
		{"certificate under anonymous", anon, certA, []string{"key-a"}, 0, "partner-a", "dns:a.partners.example", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged, reported string
			e := engine(t, nil, func(o *decision.Options) {
				o.OnDecision = func(_ *decision.Request, rep *decision.Report) { logged, reported = rep.Cert, rep.Client }
			})
			h := hdr{}
			if tc.key != nil {
				h["X-Api-Key"] = tc.key
			}
			req := get("/claims/1", h)
			req.Cert = tc.cert
			a := decide(t, e, tc.pol, req)
			detail, _ := a.body["detail"].(string)
			if a.status != tc.status || reported != tc.client || logged != tc.logged || detail != tc.detail {
				t.Errorf("status %d, client %q, cert %q, detail %q\nwant   %d, %q, %q, %q", a.status, reported, logged, detail,
					tc.status, tc.client, tc.logged, tc.detail)
			}
			if tc.status == 0 && tc.client != "anonymous" && a.client != tc.client {
				t.Errorf("X-Sluice-Client %q, want %q", a.client, tc.client)
			}
		})
	}
}

// TestCertLimit: a caller named by its certificate is counted as that
// client, whether it sends the key too or not: one request a minute in all.
func TestCertLimit(t *testing.T) {
	pol := certPolicy(t, policy.UnknownReject)
	e := engine(t, nil)
	cert := &policy.PeerCert{SHA256: strings.Repeat("a", 64), DNS: []string{"a.partners.example"}}
	withKey, alone := get("/claims/1", hdr{"X-Api-Key": {"key-a"}}), get("/claims/1", nil)
	withKey.Cert, alone.Cert = cert, cert
	if a := decide(t, e, pol, alone); !a.pass {
		t.Fatalf("first request: %+v", a)
	}
	if a := decide(t, e, pol, withKey); a.status != 429 {
		t.Errorf("second request, with the key: %d, want 429: the certificate's client and the key's are one counter", a.status)
	}
	if a := decide(t, e, pol, get("/claims/1", hdr{"X-Api-Key": {"key-a"}})); a.status != 429 {
		t.Errorf("third request, by key alone: %d, want 429", a.status)
	}
}
