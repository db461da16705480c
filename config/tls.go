package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// TLS names the certificate and key files of a listener: the tls block for
// the callers' listener, admin.tls for the admin listener's. With it the
// listener speaks TLS 1.2 or later only. The files are read at load, to
// check them, and again by the gateway whenever they change.
type TLS struct {
	// Cert is the PEM file of the certificate, with its chain after it;
	// a relative path is relative to the configuration file's directory.
	Cert string
	// Key is the PEM file of the certificate's private key (PKCS #1,
	// PKCS #8 or SEC 1), relative as Cert.
	Key string
	// Leaf is the certificate as read at load, for check's summary.
	Leaf *x509.Certificate
	// ClientCA, when set (the callers' listener only), is the PEM file of
	// the authorities whose client certificates callers may present
	// (partner certificates, clientca.go): a verified certificate can
	// name a client (policy.Client.Certs). Relative as Cert; re-read
	// when it changes. Default none: no client certificates are asked for.
	ClientCA string
	// ClientAuth says whether callers must present a client certificate:
	// ClientOptional (the default with ClientCA) or ClientRequire.
	ClientAuth ClientAuth
	// CAs are ClientCA's authorities as read at load, for check's summary.
	CAs []*x509.Certificate
}

// Equal reports whether t and o name the same files and client
// authentication (both nil: no TLS).
func (t *TLS) Equal(o *TLS) bool {
	if t == nil || o == nil {
		return t == o
	}
	return t.Cert == o.Cert && t.Key == o.Key && t.ClientCA == o.ClientCA && t.ClientAuth == o.ClientAuth
}

// Defaults and bounds of TLS.
const (
	// DefaultTLSHandshakeTimeout is server.tls_handshake_timeout's default:
	// how long a new connection has to complete its TLS handshake.
	DefaultTLSHandshakeTimeout = 10 * time.Second
	// DefaultMaxTLSHandshakes is server.max_tls_handshakes's default: the
	// handshakes in progress at once on each TLS listener.
	DefaultMaxTLSHandshakes = 256
	// TLSExpiryWarning is how close to its end a certificate makes a
	// warning at load.
	TLSExpiryWarning = 14 * 24 * time.Hour
)

var (
	tlsFields       = []string{"cert", "key"}
	callerTLSFields = []string{"cert", "key", "client_ca", "client_auth"}
)

// tls decodes a tls block at path: the certificate and key files, read and
// checked now (readable, the key the certificate's, the certificate current;
// a warning when it ends within TLSExpiryWarning). The callers' block
// (callers) also takes client_ca and client_auth (clientca.go). nil when
// absent or wrong.
func (d *decoder) tls(n *yaml.Node, path string, callers bool) *TLS {
	if !d.usable(n, path) {
		return nil
	}
	fields, what := tlsFields, "a mapping (cert, key)"
	if callers {
		fields, what = callerTLSFields, "a mapping (cert, key, client_ca, client_auth)"
	}
	m := d.fields(n, path, what+", such as {cert: /etc/sluice/tls/server.crt, key: /etc/sluice/tls/server.key}", fields)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	ca, auth := d.clientAuth(m, path)
	okCert := d.required(m, n, path, "cert", "cert: /etc/sluice/tls/server.crt")
	okKey := d.required(m, n, path, "key", "key: /etc/sluice/tls/server.key")
	if !okCert || !okKey {
		return nil
	}
	t := &TLS{Cert: d.tlsFile(m["cert"], join(path, "cert")), Key: d.tlsFile(m["key"], join(path, "key")),
		ClientCA: ca.file, ClientAuth: auth, CAs: ca.certs}
	if t.Cert == "" || t.Key == "" || ca.bad {
		return nil
	}
	pair, err := ReadKeyPair(t.Cert, t.Key, time.Now())
	if err != nil {
		at, field := m["cert"], "cert"
		if ke, ok := err.(*KeyPairError); ok && ke.InKey {
			at, field = m["key"], "key"
		}
		d.fail(at, join(path, field), "%s", strings.TrimPrefix(err.Error(), "tls: "))
		return nil
	}
	t.Leaf = pair.Leaf
	if left := time.Until(t.Leaf.NotAfter); left < TLSExpiryWarning {
		d.warnf(m["cert"], join(path, "cert"), "%s: the certificate expires in %s, on %s (renew it: sluice re-reads the files when they change)",
			t.Cert, daysLeft(left), t.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return t
}

// tlsAlone refuses a tls block in a file that runs only the decision
// service: there is no callers' listener for it.
func (d *decoder) tlsAlone(m map[string]*yaml.Node, f *File) {
	if f.Decide != nil && isNull(m["upstream"]) && !isNull(m["tls"]) {
		d.fail(d.keys["tls"], "tls", "without upstream sluice serves no callers' listener: tls would not be used "+
			"(add upstream to run the gateway too, or remove tls; the decision service's listeners do not speak TLS)")
	}
}

// tlsFile decodes one file name of a tls block, relative to the
// configuration file's directory.
func (d *decoder) tlsFile(n *yaml.Node, path string) string {
	s, ok := d.scalar(n, path, "a file path")
	if !ok {
		return ""
	}
	if s == "" || strings.ContainsRune(s, 0) {
		d.fail(n, path, "empty (a PEM file path, such as /etc/sluice/tls/server.crt)")
		return ""
	}
	if filepath.IsAbs(s) {
		return s
	}
	return filepath.Join(filepath.Dir(d.file), s)
}

// KeyPairError is why ReadKeyPair refused a certificate and key.
type KeyPairError struct {
	// File is the file that is wrong.
	File string
	// InKey is whether it is the key file (else the certificate's).
	InKey bool
	// Msg says what is wrong and what would be accepted.
	Msg string
}

func (e *KeyPairError) Error() string { return "tls: " + e.File + ": " + e.Msg }

// ReadKeyPair reads the PEM certificate (with its chain) and private key
// in certFile and keyFile and checks them: the key is the certificate's,
// and the certificate is valid at now. The result's Leaf is the
// certificate. Problems are *KeyPairError.
func ReadKeyPair(certFile, keyFile string, now time.Time) (*tls.Certificate, error) {
	certPEM, err := readPEM(certFile)
	if err != nil {
		return nil, &KeyPairError{File: certFile, Msg: err.Error() + " (a PEM certificate file sluice can read)"}
	}
	keyPEM, err := readPEM(keyFile)
	if err != nil {
		return nil, &KeyPairError{File: keyFile, InKey: true, Msg: err.Error() + " (a PEM private key file sluice can read)"}
	}
	leaf, err := firstCertificate(certPEM)
	if err != nil {
		return nil, &KeyPairError{File: certFile, Msg: err.Error()}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "tls: ")
		if strings.Contains(msg, "does not match") {
			msg = fmt.Sprintf("the key is not the key of the certificate in %s (the private key the certificate was issued for)", certFile)
		} else {
			msg += " (a PEM private key: PKCS #1, PKCS #8 or SEC 1)"
		}
		return nil, &KeyPairError{File: keyFile, InKey: true, Msg: msg}
	}
	switch {
	case now.After(leaf.NotAfter):
		return nil, &KeyPairError{File: certFile, Msg: fmt.Sprintf("the certificate expired on %s (a current certificate: callers refuse an expired one)",
			leaf.NotAfter.UTC().Format(time.RFC3339))}
	case now.Before(leaf.NotBefore):
		return nil, &KeyPairError{File: certFile, Msg: fmt.Sprintf("the certificate is not valid before %s (a current certificate: callers refuse it until then)",
			leaf.NotBefore.UTC().Format(time.RFC3339))}
	}
	pair.Leaf = leaf
	return &pair, nil
}

// firstCertificate parses the first CERTIFICATE block of certPEM: the
// certificate a listener presents.
func firstCertificate(certPEM []byte) (*x509.Certificate, error) {
	for rest := certPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, fmt.Errorf("no PEM certificate in it (a file starting with -----BEGIN CERTIFICATE-----)")
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("its first certificate does not parse: %v (an X.509 certificate in PEM)", err)
		}
		return c, nil
	}
}

// daysLeft formats a time left: "3 days", "5h0m0s" under a day.
func daysLeft(d time.Duration) string {
	if d < 24*time.Hour {
		return d.Round(time.Minute).String()
	}
	return count(int(d/(24*time.Hour)), "day")
}

// count writes n and a noun, in the plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// tlsSummary is check's line for a listener's TLS ("" without), naming its
// certificate's subject, names and end.
func tlsSummary(what string, t *TLS, s Server) string {
	if t == nil || t.Leaf == nil {
		return ""
	}
	l := t.Leaf
	return fmt.Sprintf("%s: TLS 1.2+ (ALPN http/1.1 only), certificate %s (%s), names %s, expires %s (%s left); "+
		"handshakes within %v, at most %d at once\n",
		what, t.Cert, l.Subject, strings.Join(certNames(l), ", "), l.NotAfter.UTC().Format(time.RFC3339),
		daysLeft(time.Until(l.NotAfter)), s.TLSHandshakeTimeout, s.MaxTLSHandshakes) + clientCASummary(t)
}

// certNames lists a certificate's subject alternative names: dns:, ip:,
// uri: and email: each.
func certNames(c *x509.Certificate) []string {
	var names []string
	for _, n := range c.DNSNames {
		names = append(names, "dns:"+n)
	}
	for _, ip := range c.IPAddresses {
		names = append(names, "ip:"+net.IP(ip).String())
	}
	for _, u := range c.URIs {
		names = append(names, "uri:"+u.String())
	}
	for _, e := range c.EmailAddresses {
		names = append(names, "email:"+e)
	}
	if len(names) == 0 {
		return []string{"none (callers that check names will refuse it)"}
	}
	return names
}
