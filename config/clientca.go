package config

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-rl/sluice/policy"
)

// Partner certificates: tls.client_ca names the authorities whose client
// certificates the callers' listener verifies, tls.client_auth whether a
// caller must present one, and clients.list[].certs which certificate
// names which client.

// ClientAuth says whether the callers' listener asks for client
// certificates, and whether a caller must present one.
type ClientAuth uint8

const (
	// NoClientCerts: no client_ca; no certificate is asked for.
	NoClientCerts ClientAuth = iota
	// ClientOptional (client_auth: optional, the default with client_ca):
	// a caller may present a certificate, which must then verify against
	// client_ca; one without is identified by its key as without TLS.
	ClientOptional
	// ClientRequire (client_auth: require): the handshake fails without a
	// certificate that verifies against client_ca.
	ClientRequire
)

func (a ClientAuth) String() string {
	switch a {
	case NoClientCerts:
		return "none"
	case ClientOptional:
		return "optional"
	case ClientRequire:
		return "require"
	}
	return fmt.Sprintf("ClientAuth(%d)", uint8(a))
}

// clientCAs is a tls block's client_ca as decoded: its file and
// authorities, or bad when it was given and is wrong.
type clientCAs struct {
	file  string
	certs []*x509.Certificate
	bad   bool
}

// clientAuth decodes the client_ca and client_auth of the tls block m.
func (d *decoder) clientAuth(m map[string]*yaml.Node, path string) (clientCAs, ClientAuth) {
	var ca clientCAs
	auth := NoClientCerts
	if n := m["client_ca"]; !isNull(n) {
		at := join(path, "client_ca")
		ca.file = d.tlsFile(n, at)
		if ca.file == "" {
			ca.bad = true
		} else if certs, err := ReadClientCAs(ca.file, time.Now()); err != nil {
			d.fail(n, at, "%s", strings.TrimPrefix(err.Error(), "tls: "))
			ca.bad = true
		} else {
			ca.certs = certs
			d.caExpiry(n, at, ca.file, certs)
		}
		auth = ClientOptional
	}
	if n := m["client_auth"]; !isNull(n) {
		at := join(path, "client_auth")
		v := d.oneOf(n, at, "optional", []string{"optional", "require"})
		switch {
		case isNull(m["client_ca"]):
			d.fail(n, at, "client_auth without client_ca: there is no authority to verify client certificates against "+
				"(add client_ca: a PEM file of the partners' authorities, such as client_ca: /etc/sluice/tls/partners-ca.crt; or remove client_auth)")
		case v == "require":
			auth = ClientRequire
		}
	}
	return ca, auth
}

// caExpiry warns of an authority that ends within TLSExpiryWarning.
func (d *decoder) caExpiry(n *yaml.Node, path, file string, certs []*x509.Certificate) {
	for _, c := range certs {
		if left := time.Until(c.NotAfter); left < TLSExpiryWarning {
			d.warnf(n, path, "%s: the authority %s expires in %s, on %s: client certificates it signed fail their handshakes then "+
				"(add its successor to the file: sluice re-reads it when it changes)",
				file, c.Subject, daysLeft(left), c.NotAfter.UTC().Format(time.RFC3339))
		}
	}
}

// ReadClientCAs reads the PEM file of one or more authorities' certificates
// (client_ca) and checks each: an X.509 CA certificate (basic constraints
// CA:TRUE), valid at now. Problems are *KeyPairError.
func ReadClientCAs(file string, now time.Time) ([]*x509.Certificate, error) {
	data, err := readPEM(file)
	if err != nil {
		return nil, &KeyPairError{File: file, Msg: err.Error() + " (a PEM file of CA certificates sluice can read)"}
	}
	var certs []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, &KeyPairError{File: file, Msg: fmt.Sprintf("a %s block (client_ca holds CA certificates only: -----BEGIN CERTIFICATE----- blocks)", b.Type)}
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, &KeyPairError{File: file, Msg: fmt.Sprintf("certificate %d does not parse: %v (X.509 certificates in PEM)", len(certs)+1, err)}
		}
		switch {
		case !c.IsCA || !c.BasicConstraintsValid:
			return nil, &KeyPairError{File: file, Msg: fmt.Sprintf("certificate %d (%s) is not a CA certificate (the authorities that sign "+
				"the partners' certificates, with basic constraints CA:TRUE; not the partners' own certificates)", len(certs)+1, c.Subject)}
		case now.After(c.NotAfter):
			return nil, &KeyPairError{File: file, Msg: fmt.Sprintf("the authority %s expired on %s (current CA certificates: no certificate it signed verifies)",
				c.Subject, c.NotAfter.UTC().Format(time.RFC3339))}
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, &KeyPairError{File: file, Msg: "no PEM certificate in it (a file of CA certificates, each starting with -----BEGIN CERTIFICATE-----)"}
	}
	return certs, nil
}

// certSelector decodes one entry of a client's certs.
func (d *decoder) certSelector(n *yaml.Node, path string) (policy.CertSelector, bool) {
	s, ok := d.scalar(n, path, "a certificate selector ("+policy.CertSelectorSyntax+")")
	if !ok {
		return policy.CertSelector{}, false
	}
	sel, err := policy.ParseCertSelector(s)
	if err != nil {
		d.fail(n, path, "%q: %v", clip(s), err)
		return policy.CertSelector{}, false
	}
	return sel, true
}

// certsUnverified warns of clients' certificates when no listener asks
// callers for one: they would name nobody.
func (d *decoder) certsUnverified(f *File) {
	if f.TLS != nil && f.TLS.ClientCA != "" || d.failed["tls"] || d.failed["tls.client_ca"] {
		return
	}
	for i, c := range f.Policy.Clients.List {
		if len(c.Certs) > 0 {
			at := join(index("clients.list", i), "certs")
			d.warnf(d.nodes[at], at, "no client certificate is verified (tls.client_ca is not set): these certificates name client %s on no request "+
				"(set tls.client_ca to the authorities that sign them)", c.ID)
		}
	}
}

// clientCASummary is check's line for a listener's client certificates
// ("" without client_ca): the authorities, each with its subject and end.
func clientCASummary(t *TLS) string {
	if t.ClientCA == "" {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  client certificates: %s, verified against %s:", t.ClientAuth, t.ClientCA)
	for _, c := range t.CAs {
		fmt.Fprintf(&b, " %s, expires %s (%s left);", c.Subject, c.NotAfter.UTC().Format(time.RFC3339), daysLeft(time.Until(c.NotAfter)))
	}
	return strings.TrimSuffix(b.String(), ";") + "\n"
}
