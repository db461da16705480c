// Package testcert makes certificates for tests, as ECDSA P-256 PEM: a
// self-signed server certificate for 127.0.0.1 and localhost (New), or a
// private authority with a server and a client certificate it signed
// (WriteAuthority).
package testcert

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Pair is a certificate and its key, in PEM, with the parsed certificate.
type Pair struct {
	CertPEM, KeyPEM []byte
	Cert            *x509.Certificate
}

// Options shape a certificate; the zero value is valid for 90 days from an
// hour ago, named CN=sluice-test, 127.0.0.1 and localhost.
type Options struct {
	CommonName          string
	NotBefore, NotAfter time.Time
}

// New makes a self-signed server certificate and its key.
func New(t testing.TB, o Options) Pair {
	t.Helper()
	key := newKey(t)
	if o.CommonName == "" {
		o.CommonName = "sluice-test"
	}
	if o.NotBefore.IsZero() {
		o.NotBefore = time.Now().Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = time.Now().Add(90 * 24 * time.Hour)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: o.CommonName},
		NotBefore: o.NotBefore, NotAfter: o.NotAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return Pair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		Cert:    cert,
	}
}

// Write writes p to dir as server.crt and server.key (replacing them
// through a rename each, as a renewal does) and returns their paths.
func (p Pair) Write(t testing.TB, dir string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	for _, f := range []struct {
		name string
		data []byte
	}{{certFile, p.CertPEM}, {keyFile, p.KeyPEM}} {
		tmp := f.name + ".tmp"
		if err := os.WriteFile(tmp, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, f.name); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// Pool is a certificate pool trusting p's certificate.
func (p Pair) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.Cert)
	return pool
}

// TLS is p as a crypto/tls certificate, for a tls.Config's Certificates.
func (p Pair) TLS(t testing.TB) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
