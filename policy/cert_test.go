package policy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/policy"
)

const fp = "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12"

func TestParseCertSelector(t *testing.T) {
	colons := strings.ToUpper(fp[:2])
	for i := 2; i < len(fp); i += 2 {
		colons += ":" + strings.ToUpper(fp[i:i+2])
	}
	for _, tc := range []struct {
		in   string
		want policy.CertSelector
		err  string
	}{
		{"dns:Partner-A.Example", policy.CertSelector{Kind: policy.CertDNS, Value: "partner-a.example"}, ""},
		{"DNS:a.example", policy.CertSelector{Kind: policy.CertDNS, Value: "a.example"}, ""},
		{"uri:spiffe://partners/garage-a", policy.CertSelector{Kind: policy.CertURI, Value: "spiffe://partners/garage-a"}, ""},
		{"cn:Partner A", policy.CertSelector{Kind: policy.CertCN, Value: "Partner A"}, ""},
		{"cn:a:b", policy.CertSelector{Kind: policy.CertCN, Value: "a:b"}, ""},
		{"sha256:" + fp, policy.CertSelector{Kind: policy.CertSHA256, Value: fp}, ""},
		{"sha256:" + colons, policy.CertSelector{Kind: policy.CertSHA256, Value: fp}, ""},
		{"partner-a.example", policy.CertSelector{}, "no kind before a ':'"},
		{"ip:192.0.2.1", policy.CertSelector{}, `unknown kind "ip"`},
		{"email:a@b", policy.CertSelector{}, `unknown kind "email"`},
		{"dns:", policy.CertSelector{}, "nothing after dns:"},
		{"dns:a b", policy.CertSelector{}, "is not a DNS name"},
		{"dns:spiffe://x", policy.CertSelector{}, "is not a DNS name"},
		{"uri:partner-a", policy.CertSelector{}, "is not a URI"},
		{"cn:a\nb", policy.CertSelector{}, "not a certificate name"},
		{"cn:\xff", policy.CertSelector{}, "not a certificate name"},
		{"sha256:" + fp[:62], policy.CertSelector{}, "is not a SHA-256 fingerprint (64 hex digits"},
		{"sha256:" + fp[:63] + "g", policy.CertSelector{}, "is not a SHA-256 fingerprint"},
		{"sha256::" + fp, policy.CertSelector{}, "is not a SHA-256 fingerprint"},
		{"sha256:" + fp + "00", policy.CertSelector{}, "is not a SHA-256 fingerprint"},
	} {
		got, err := policy.ParseCertSelector(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseCertSelector(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseCertSelector(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
		case tc.err != "" && !strings.Contains(err.Error(), "dns:NAME, uri:URI") && !strings.Contains(err.Error(), "such as"):
			t.Errorf("ParseCertSelector(%q): %v does not say what is accepted", tc.in, err)
		}
	}
}

// FuzzParseCertSelector: a selector that parses spells itself back the
// same (String, then ParseCertSelector), and a compiled client with it is
// found by a certificate carrying that name.
func FuzzParseCertSelector(f *testing.F) {
	for _, s := range []string{"dns:a.example", "uri:spiffe://p/a", "cn:Partner A", "sha256:" + fp, "sha256:AB:12", "x", "dns:", ":", "cn:\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := policy.ParseCertSelector(s)
		if err != nil {
			if !strings.Contains(err.Error(), "(") {
				t.Fatalf("%q: error %v says nothing of what is accepted", s, err)
			}
			return
		}
		again, err := policy.ParseCertSelector(sel.String())
		if err != nil || again != sel {
			t.Fatalf("%q: %v spells back as %v, %v", s, sel, again, err)
		}
		c, err := policy.Compile(policy.Policy{Rules: []policy.Rule{{Name: "a", Rate: rate(1, time.Second)}},
			Clients: policy.Clients{List: []policy.Client{{ID: "p", Certs: []policy.CertSelector{sel}}}}})
		if err != nil {
			t.Fatalf("%v: %v", sel, err)
		}
		pc := &policy.PeerCert{}
		switch sel.Kind {
		case policy.CertSHA256:
			pc.SHA256 = sel.Value
		case policy.CertURI:
			pc.URIs = []string{sel.Value}
		case policy.CertDNS:
			pc.DNS = []string{sel.Value}
		case policy.CertCN:
			pc.CN = sel.Value
		}
		if m := c.CallerByCert(pc); m.Caller == nil || m.Caller.ID != "p" || m.Selector != sel.String() {
			t.Fatalf("%v: CallerByCert = %+v", sel, m)
		}
	})
}

func sel(t *testing.T, s string) policy.CertSelector {
	t.Helper()
	v, err := policy.ParseCertSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCallerByCert(t *testing.T) {
	p := base()
	p.Clients.List = append(p.Clients.List,
		policy.Client{ID: "by-sum", Certs: []policy.CertSelector{sel(t, "sha256:"+fp)}},
		policy.Client{ID: "by-uri", Certs: []policy.CertSelector{sel(t, "uri:spiffe://p/a")}},
		policy.Client{ID: "by-dns", Certs: []policy.CertSelector{sel(t, "dns:a.example"), sel(t, "dns:b.example")}},
		policy.Client{ID: "other-dns", Keys: []string{"k-o"}, Certs: []policy.CertSelector{sel(t, "dns:o.example")}},
		policy.Client{ID: "by-cn", Certs: []policy.CertSelector{sel(t, "cn:Partner A")}},
	)
	c := mustCompile(t, p)
	for _, tc := range []struct {
		name      string
		pc        policy.PeerCert
		want, sel string
		other     string
	}{
		{"fingerprint beats every name", policy.PeerCert{SHA256: fp, URIs: []string{"spiffe://p/a"}, DNS: []string{"a.example"}, CN: "Partner A"}, "by-sum", "sha256:" + fp, ""},
		{"URI beats DNS and CN", policy.PeerCert{SHA256: "00", URIs: []string{"spiffe://p/x", "spiffe://p/a"}, DNS: []string{"a.example"}, CN: "Partner A"}, "by-uri", "uri:spiffe://p/a", ""},
		{"DNS beats CN", policy.PeerCert{DNS: []string{"z.example", "b.example"}, CN: "Partner A"}, "by-dns", "dns:b.example", ""},
		{"two DNS names of one client", policy.PeerCert{DNS: []string{"a.example", "b.example"}}, "by-dns", "dns:a.example", ""},
		{"CN alone", policy.PeerCert{CN: "Partner A"}, "by-cn", "cn:Partner A", ""},
		{"CN is exact", policy.PeerCert{CN: "partner a"}, "", "", ""},
		{"nothing listed", policy.PeerCert{SHA256: fp[:10], DNS: []string{"x.example"}, CN: "X"}, "", "", ""},
		{"two clients' DNS names: ambiguous", policy.PeerCert{DNS: []string{"a.example", "o.example"}}, "by-dns", "dns:a.example", "other-dns"},
	} {
		m := c.CallerByCert(&tc.pc)
		got, other := "", ""
		if m.Caller != nil {
			got = m.Caller.ID
		}
		if m.Other != nil {
			other = m.Other.ID
		}
		if got != tc.want || m.Selector != tc.sel || other != tc.other {
			t.Errorf("%s: CallerByCert = %q by %q (other %q); want %q by %q (other %q)", tc.name, got, m.Selector, other, tc.want, tc.sel, tc.other)
		}
	}
	if m := c.CallerByCert(nil); m.Caller != nil {
		t.Errorf("CallerByCert(nil) = %+v", m)
	}
}

func TestCertSelectorErrors(t *testing.T) {
	p := base()
	p.Clients.List = append(p.Clients.List,
		policy.Client{ID: "a", Certs: []policy.CertSelector{sel(t, "dns:a.example")}},
		policy.Client{ID: "b", Certs: []policy.CertSelector{sel(t, "dns:A.example"), {Kind: policy.CertDNS, Value: "Upper.example"}}},
		policy.Client{ID: "c"},
	)
	_, err := policy.Compile(p)
	for _, want := range []string{
		`clients.list[4].certs[0]: dns:a.example already names client "a"`,
		`clients.list[4].certs[1]: "dns:Upper.example" is not a certificate selector`,
		`clients.list[5].keys: no keys (a client needs at least one access key, or a certificate in certs)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile: %v\nwant %s", err, want)
		}
	}
}
