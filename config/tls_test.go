package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/testcert"
)

// tlsFile is a configuration whose tls block names cert and key.
func tlsFile(cert, key string) string {
	return "listen: 127.0.0.1:8443\nupstream: http://127.0.0.1:9000\ntls:\n  cert: " + cert + "\n  key: " + key + "\nrules: [{name: a, rate: 1/s}]\n"
}

func TestTLSBlock(t *testing.T) {
	dir := t.TempDir()
	cert, key := testcert.New(t, testcert.Options{CommonName: "api.example.test"}).Write(t, dir)
	f, err := Parse(filepath.Join(dir, "sluice.yaml"), []byte(tlsFile("server.crt", key))) // cert relative to the file
	if err != nil {
		t.Fatal(err)
	}
	if f.TLS == nil || f.TLS.Cert != cert || f.TLS.Key != key || f.TLS.Leaf == nil {
		t.Fatalf("TLS = %+v, want cert %s and key %s read", f.TLS, cert, key)
	}
	if len(f.Warnings) > 0 {
		t.Errorf("warnings: %v", f.Warnings)
	}
	if f.AdminTLS != nil {
		t.Errorf("AdminTLS = %+v without admin.tls", f.AdminTLS)
	}
	var b strings.Builder
	if err := f.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tls: TLS 1.2+ (ALPN http/1.1 only)", "CN=api.example.test", "names dns:localhost, ip:127.0.0.1",
		"expires " + f.TLS.Leaf.NotAfter.UTC().Format(time.RFC3339), "handshakes within 10s, at most 256 at once"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

func TestAdminTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := testcert.New(t, testcert.Options{}).Write(t, dir)
	text := "listen: 127.0.0.1:8080\nupstream: http://127.0.0.1:9000\nadmin:\n  listen: 127.0.0.1:9090\n  tls: {cert: " + cert + ", key: " + key + "}\nrules: [{name: a, rate: 1/s}]\n"
	f, err := Parse("t.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if f.TLS != nil || f.AdminTLS == nil || f.AdminTLS.Cert != cert {
		t.Fatalf("TLS = %+v, AdminTLS = %+v; want only the admin listener's", f.TLS, f.AdminTLS)
	}
	var b strings.Builder
	_ = f.WriteSummary(&b)
	if !strings.Contains(b.String(), "admin tls: TLS 1.2+") {
		t.Errorf("summary lacks the admin listener's TLS:\n%s", b.String())
	}
}

func TestTLSErrors(t *testing.T) {
	dir := t.TempDir()
	good := testcert.New(t, testcert.Options{})
	cert, key := good.Write(t, dir)
	other := filepath.Join(dir, "other.key")
	if err := os.WriteFile(other, testcert.New(t, testcert.Options{}).KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	expired := filepath.Join(dir, "expired")
	if err := os.Mkdir(expired, 0o700); err != nil {
		t.Fatal(err)
	}
	oldCert, oldKey := testcert.New(t, testcert.Options{NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}).Write(t, expired)
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, text, want string }{
		{"key of another certificate", tlsFile(cert, other), "t.yaml:5:8: tls.key: " + other + ": the key is not the key of the certificate in " + cert},
		{"expired", tlsFile(oldCert, oldKey), "t.yaml:4:9: tls.cert: " + oldCert + ": the certificate expired on"},
		{"missing certificate file", tlsFile(filepath.Join(dir, "none.crt"), key), "t.yaml:4:9: tls.cert: " + filepath.Join(dir, "none.crt") + ": cannot read it: no such file or directory (a PEM certificate file sluice can read)"},
		{"missing key file", tlsFile(cert, filepath.Join(dir, "none.key")), "t.yaml:5:8: tls.key: " + filepath.Join(dir, "none.key") + ": cannot read it: no such file or directory"},
		{"not a certificate", tlsFile(notPEM, key), "t.yaml:4:9: tls.cert: " + notPEM + ": no PEM certificate in it (a file starting with -----BEGIN CERTIFICATE-----)"},
		{"not a key", tlsFile(cert, notPEM), "t.yaml:5:8: tls.key: " + notPEM + ": failed to find any PEM data in key input (a PEM private key"},
		{"key missing", "listen: 127.0.0.1:8443\nupstream: http://127.0.0.1:9000\ntls: {cert: " + cert + "}\nrules: [{name: a, rate: 1/s}]\n",
			"t.yaml:3:6: tls.key: missing (required; such as key: /etc/sluice/tls/server.key)"},
		{"not a mapping", "listen: 127.0.0.1:8443\nupstream: http://127.0.0.1:9000\ntls: on\nrules: [{name: a, rate: 1/s}]\n",
			"t.yaml:3:6: tls: want a mapping (cert, key, client_ca, client_auth)"},
		{"unknown field", "listen: 127.0.0.1:8443\nupstream: http://127.0.0.1:9000\ntls: {cert: " + cert + ", key: " + key + ", ca: x}\nrules: [{name: a, rate: 1/s}]\n",
			`tls: unknown field "ca" (accepted: cert, key, client_ca, client_auth)`},
		{"admin key of another certificate", "listen: 127.0.0.1:8080\nupstream: http://127.0.0.1:9000\nadmin: {tls: {cert: " + cert + ", key: " + other + "}}\nrules: [{name: a, rate: 1/s}]\n",
			"admin.tls.key: " + other + ": the key is not the key of the certificate"},
		{"no upstream", "decide: {http: 127.0.0.1:8081}\ntls: {cert: " + cert + ", key: " + key + "}\nrules: [{name: a, rate: 1/s}]\n",
			"t.yaml:2:1: tls: without upstream sluice serves no callers' listener"},
		{"handshake timeout", "listen: 127.0.0.1:8443\nupstream: http://127.0.0.1:9000\nserver: {tls_handshake_timeout: 0s}\nrules: [{name: a, rate: 1/s}]\n",
			"server.tls_handshake_timeout: 0s is out of range (more than 0, at most 24h; default 10s)"},
		{"handshakes", "listen: 127.0.0.1:8443\nupstream: http://127.0.0.1:9000\nserver: {max_tls_handshakes: 0}\nrules: [{name: a, rate: 1/s}]\n",
			"server.max_tls_handshakes: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}

func TestTLSExpiryWarning(t *testing.T) {
	dir := t.TempDir()
	cert, key := testcert.New(t, testcert.Options{NotAfter: time.Now().Add(10*24*time.Hour + time.Hour)}).Write(t, dir)
	f, err := Parse("t.yaml", []byte(tlsFile(cert, key)))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0].Error(), "t.yaml:4:9: tls.cert: "+cert+": the certificate expires in 10 days") {
		t.Errorf("warnings = %v, want one that the certificate expires in 10 days", f.Warnings)
	}
}

// clientCAFile is a configuration whose tls block adds extra (client_ca,
// client_auth lines) to cert and key, and whose clients list certs.
func clientCAFile(cert, key, extra, clients string) string {
	return "listen: 127.0.0.1:8443\nupstream: http://127.0.0.1:9000\ntls:\n  cert: " + cert + "\n  key: " + key + "\n" + extra +
		"clients:\n  list:\n" + clients + "rules: [{name: a, rate: 1/s}]\n"
}

func writeFile(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestClientCA(t *testing.T) {
	dir := t.TempDir()
	cert, key := testcert.New(t, testcert.Options{}).Write(t, dir)
	a, b := testcert.NewAuthority(t, "Partners CA 1"), testcert.NewAuthority(t, "Partners CA 2")
	writeFile(t, filepath.Join(dir, "partners.pem"), append(append([]byte{}, a.CertPEM...), b.CertPEM...))
	text := clientCAFile(cert, key, "  client_ca: partners.pem\n  client_auth: require\n",
		"    - {id: partner-a, certs: [\"dns:Garage-A.partners.example\", \"uri:spiffe://partners/garage-a\", \"cn:garage-a\", \"sha256:"+
			strings.Repeat("AB:", 31)+"AB\"]}\n    - {id: partner-b, keys: [k-b]}\n")
	f, err := Parse(filepath.Join(dir, "sluice.yaml"), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if f.TLS.ClientCA != filepath.Join(dir, "partners.pem") || f.TLS.ClientAuth != ClientRequire || len(f.TLS.CAs) != 2 {
		t.Fatalf("TLS = %+v, want partners.pem's two authorities, require", f.TLS)
	}
	certs := f.Policy.Clients.List[0].Certs
	if len(certs) != 4 || certs[0].String() != "dns:garage-a.partners.example" || certs[3].String() != "sha256:"+strings.Repeat("ab", 32) {
		t.Errorf("certs = %v", certs)
	}
	if len(f.Warnings) > 0 {
		t.Errorf("warnings: %v", f.Warnings)
	}
	var s strings.Builder
	_ = f.WriteSummary(&s)
	for _, want := range []string{"client certificates: require, verified against " + f.TLS.ClientCA, "CN=Partners CA 1, expires ", "CN=Partners CA 2, expires ",
		"clients: 2, recognised by X-API-Key and client certificates"} {
		if !strings.Contains(s.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, s.String())
		}
	}
	f, err = Parse(filepath.Join(dir, "sluice.yaml"), []byte(clientCAFile(cert, key, "  client_ca: partners.pem\n", "    - {id: p, keys: [k]}\n")))
	if err != nil || f.TLS.ClientAuth != ClientOptional {
		t.Errorf("client_ca alone: %v, %+v; want client_auth optional", err, f.TLS)
	}
	if !f.TLS.Equal(f.TLS) || f.TLS.Equal(&TLS{Cert: f.TLS.Cert, Key: f.TLS.Key}) {
		t.Errorf("Equal does not compare client_ca")
	}
	// Certificates no listener verifies name nobody: a warning says so.
	f, err = Parse("t.yaml", []byte(clientCAFile(cert, key, "", "    - {id: p, certs: [\"cn:p\"]}\n")))
	if err != nil || len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0].Error(), "t.yaml:8:22: clients.list[0].certs: no client certificate is verified (tls.client_ca is not set)") {
		t.Errorf("certs without client_ca: %v, warnings %v", err, f.Warnings)
	}
}

func TestClientCAErrors(t *testing.T) {
	dir := t.TempDir()
	cert, key := testcert.New(t, testcert.Options{}).Write(t, dir)
	ca := testcert.NewAuthority(t, "Partners CA")
	leaf := writeFile(t, filepath.Join(dir, "leaf.pem"), ca.Client(t, testcert.Client{CommonName: "p"}).CertPEM)
	withKey := writeFile(t, filepath.Join(dir, "with-key.pem"), append(append([]byte{}, ca.CertPEM...), testcert.New(t, testcert.Options{}).KeyPEM...))
	notPEM := writeFile(t, filepath.Join(dir, "not.pem"), []byte("hello\n"))
	good := writeFile(t, filepath.Join(dir, "ca.pem"), ca.CertPEM)
	one := "    - {id: p, keys: [k]}\n"
	for _, tc := range []struct{ name, text, want string }{
		{"missing file", clientCAFile(cert, key, "  client_ca: none.pem\n", one),
			"t.yaml:6:14: tls.client_ca: " + filepath.Join(dir, "none.pem") + ": cannot read it: no such file or directory (a PEM file of CA certificates sluice can read)"},
		{"not PEM", clientCAFile(cert, key, "  client_ca: "+notPEM+"\n", one),
			"t.yaml:6:14: tls.client_ca: " + notPEM + ": no PEM certificate in it (a file of CA certificates"},
		{"a leaf, not a CA", clientCAFile(cert, key, "  client_ca: "+leaf+"\n", one),
			"t.yaml:6:14: tls.client_ca: " + leaf + ": certificate 1 (CN=p) is not a CA certificate (the authorities that sign the partners' certificates"},
		{"a key in it", clientCAFile(cert, key, "  client_ca: "+withKey+"\n", one),
			"tls.client_ca: " + withKey + ": a PRIVATE KEY block (client_ca holds CA certificates only"},
		{"client_auth without client_ca", clientCAFile(cert, key, "  client_auth: require\n", one),
			"t.yaml:6:16: tls.client_auth: client_auth without client_ca: there is no authority to verify client certificates against (add client_ca"},
		{"client_auth spelling", clientCAFile(cert, key, "  client_ca: "+good+"\n  client_auth: required\n", one),
			`t.yaml:7:16: tls.client_auth: unknown value "required" (did you mean "require"? accepted: optional, require)`},
		{"client_ca on the admin listener", "listen: 127.0.0.1:8080\nupstream: http://127.0.0.1:9000\nadmin: {tls: {cert: " + cert + ", key: " + key + ", client_ca: " + good + "}}\nrules: [{name: a, rate: 1/s}]\n",
			`admin.tls: unknown field "client_ca" (accepted: cert, key)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(filepath.Join(dir, "t.yaml"), []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}
