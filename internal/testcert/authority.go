package testcert

// Certificates signed by a private authority, for tests of both ends
// verifying each other (Redis over TLS with client certificates).

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ServerName is the DNS name the server certificate carries, besides the
// address 127.0.0.1.
const ServerName = "redis.test"

// Files are the PEM files WriteAuthority made.
type Files struct {
	CA                    string // the authority's certificate
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	// OtherCA is another authority's certificate, which signed neither.
	OtherCA string
}

// WriteAuthority makes in dir a fresh authority, a server certificate for
// 127.0.0.1 and ServerName and a client certificate, both signed by it, and
// another authority that signed neither; valid from an hour ago for a day.
func WriteAuthority(t testing.TB, dir string) Files {
	t.Helper()
	f := Files{CA: filepath.Join(dir, "ca.pem"), ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"), OtherCA: filepath.Join(dir, "other-ca.pem")}
	ca, caKey := authority(t, "sluice test CA", f.CA)
	authority(t, "another CA", f.OtherCA)
	leaf(t, ca, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: ServerName}, DNSNames: []string{ServerName},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, f.ServerCert, f.ServerKey)
	leaf(t, ca, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "sluice"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, f.ClientCert, f.ClientKey)
	return f
}

func authority(t testing.TB, name, certFile string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der := sign(t, tmpl, tmpl, &key.PublicKey, key)
	writePEM(t, certFile, "CERTIFICATE", der)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func leaf(t testing.TB, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate, certFile, keyFile string) {
	t.Helper()
	key := newKey(t)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	writePEM(t, certFile, "CERTIFICATE", sign(t, tmpl, ca, &key.PublicKey, caKey))
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, keyFile, "PRIVATE KEY", der)
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func sign(t testing.TB, tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, by *ecdsa.PrivateKey) []byte {
	t.Helper()
	return signFor(t, tmpl, parent, pub, by, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
}

// signFor is sign for the span from notBefore to notAfter.
func signFor(t testing.TB, tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, by *ecdsa.PrivateKey, notBefore, notAfter time.Time) []byte {
	t.Helper()
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = notBefore, notAfter
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, by)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Authority is a private certificate authority held in memory, for tests
// of client certificates (partner certificates, mutual TLS).
type Authority struct {
	// Cert and CertPEM are its certificate.
	Cert    *x509.Certificate
	CertPEM []byte
	key     *ecdsa.PrivateKey
}

// NewAuthority makes an authority named CN=name, valid from an hour ago
// for a year.
func NewAuthority(t testing.TB, name string) *Authority {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der := signFor(t, tmpl, tmpl, &key.PublicKey, key, time.Now().Add(-time.Hour), time.Now().Add(365*24*time.Hour))
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &Authority{Cert: cert, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}
}

// Client shapes a client certificate: its subject's common name, its
// subject alternative names, and when it is valid (zero: from an hour ago
// for a day).
type Client struct {
	CommonName          string
	DNSNames, URIs      []string
	NotBefore, NotAfter time.Time
}

// Client makes a client certificate the authority signed, and its key.
func (a *Authority) Client(t testing.TB, o Client) Pair {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: o.CommonName}, DNSNames: o.DNSNames,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	for _, s := range o.URIs {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, u)
	}
	der := signFor(t, tmpl, a.Cert, &key.PublicKey, a.key,
		cmpTime(o.NotBefore, time.Now().Add(-time.Hour)), cmpTime(o.NotAfter, time.Now().Add(24*time.Hour)))
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return Pair{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), Cert: cert}
}

func cmpTime(a, b time.Time) time.Time {
	if a.IsZero() {
		return b
	}
	return a
}
