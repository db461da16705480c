package policy

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Partner certificates: a client (Client.Certs) may be named by the
// certificate its caller presents on a TLS connection whose handshake
// verified it, as well as by an access key. A certificate is matched by its
// SHA-256 fingerprint first, then by its subject alternative names (URI,
// then DNS), then by its subject's common name: the first kind that names a
// client decides.

// CertKind is what part of a certificate a CertSelector matches.
type CertKind uint8

// The kinds of CertSelector, in the order a certificate is matched.
const (
	// CertSHA256 matches the SHA-256 digest of the certificate's DER bytes
	// (its fingerprint): that one certificate, not a renewal of it.
	CertSHA256 CertKind = iota + 1
	// CertURI matches a URI subject alternative name, exactly
	// (spiffe://partners/garage-a).
	CertURI
	// CertDNS matches a DNS subject alternative name, regardless of case.
	CertDNS
	// CertCN matches the subject's common name, exactly.
	CertCN
)

// certKinds are the spellings of the kinds, as ParseCertSelector reads them.
var certKinds = [...]string{CertSHA256: "sha256", CertURI: "uri", CertDNS: "dns", CertCN: "cn"}

// CertSelectorSyntax says what ParseCertSelector accepts.
const CertSelectorSyntax = `dns:NAME, uri:URI, cn:NAME or sha256:FINGERPRINT (64 hex digits, colons allowed), ` +
	`such as "dns:partner-a.example" or "uri:spiffe://partners/partner-a"`

// maxSelector bounds a selector's value, as a certificate's names are.
const maxSelector = 1024

// CertSelector names a client's certificate: the kind of its part to
// match, and the value. Value is canonical: lower case for CertDNS, 64
// lower-case hex digits without colons for CertSHA256.
type CertSelector struct {
	Kind  CertKind
	Value string
}

// String spells s as configuration does: "dns:partner-a.example".
func (s CertSelector) String() string {
	if int(s.Kind) >= len(certKinds) || s.Kind == 0 {
		return fmt.Sprintf("CertKind(%d):%s", s.Kind, s.Value)
	}
	return certKinds[s.Kind] + ":" + s.Value
}

// ParseCertSelector reads a selector: "dns:partner-a.example",
// "uri:spiffe://partners/partner-a", "cn:Partner A" or "sha256:" and the
// certificate's fingerprint as 64 hex digits, in either case, with or
// without colons between the bytes (as openssl x509 -fingerprint
// -sha256 prints it). The error says what is wrong and what is accepted.
func ParseCertSelector(s string) (CertSelector, error) {
	prefix, value, ok := strings.Cut(s, ":")
	if !ok {
		return CertSelector{}, fmt.Errorf("no kind before a ':' (%s)", CertSelectorSyntax)
	}
	var kind CertKind
	for k, name := range certKinds {
		if name != "" && strings.EqualFold(prefix, name) {
			kind = CertKind(k)
		}
	}
	if kind == 0 {
		return CertSelector{}, fmt.Errorf("unknown kind %q (%s)", clipped(prefix), CertSelectorSyntax)
	}
	if value == "" {
		return CertSelector{}, fmt.Errorf("nothing after %s: (%s)", certKinds[kind], CertSelectorSyntax)
	}
	if len(value) > maxSelector || !utf8.ValidString(value) || strings.ContainsFunc(value, isControl) {
		return CertSelector{}, fmt.Errorf("%s: not a certificate name (printable UTF-8, at most %d bytes; %s)", certKinds[kind], maxSelector, CertSelectorSyntax)
	}
	switch kind {
	case CertSHA256:
		sum, err := parseFingerprint(value)
		if err != nil {
			return CertSelector{}, err
		}
		value = sum
	case CertDNS:
		if strings.ContainsAny(value, " /:") {
			return CertSelector{}, fmt.Errorf("dns:%s is not a DNS name (a name such as partner-a.example; uri: for a URI)", clipped(value))
		}
		value = strings.ToLower(value)
	case CertURI:
		if !strings.Contains(value, ":") {
			return CertSelector{}, fmt.Errorf("uri:%s is not a URI (a URI with its scheme, such as spiffe://partners/partner-a; dns: for a DNS name)", clipped(value))
		}
	}
	return CertSelector{Kind: kind, Value: value}, nil
}

// parseFingerprint reads 64 hex digits, colons allowed between pairs, into
// their lower-case form without colons.
func parseFingerprint(s string) (string, error) {
	bare := strings.ToLower(strings.ReplaceAll(s, ":", ""))
	b, err := hex.DecodeString(bare)
	if err != nil || len(b) != sha256.Size || strings.Contains(s, "::") || strings.HasPrefix(s, ":") || strings.HasSuffix(s, ":") {
		return "", fmt.Errorf("sha256:%s is not a SHA-256 fingerprint (64 hex digits, colons allowed between pairs, "+
			"such as openssl x509 -noout -fingerprint -sha256 prints)", clipped(s))
	}
	return bare, nil
}

func isControl(r rune) bool { return r < ' ' || r == 0x7f }

// clipped shortens s for an error message.
func clipped(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// PeerCert is a caller's client certificate, verified by the TLS handshake,
// in the parts a CertSelector matches. A transport makes it once per
// connection (NewPeerCert); which client it names is asked per request
// (Compiled.CallerByCert), so that a reload that removes a selector takes
// effect on open connections too.
type PeerCert struct {
	// SHA256 is the digest of the certificate's DER bytes, in 64 lower-case
	// hex digits.
	SHA256 string
	// URIs and DNS are its subject alternative names (DNS in lower case).
	URIs, DNS []string
	// CN is its subject's common name.
	CN string

	fingerprint string // Fingerprint, made once
}

// NewPeerCert reads the parts of leaf a selector matches.
func NewPeerCert(leaf *x509.Certificate) *PeerCert {
	sum := sha256.Sum256(leaf.Raw)
	pc := &PeerCert{SHA256: hex.EncodeToString(sum[:]), CN: leaf.Subject.CommonName}
	pc.fingerprint = pc.Fingerprint()
	for _, u := range leaf.URIs {
		pc.URIs = append(pc.URIs, u.String())
	}
	for _, n := range leaf.DNSNames {
		pc.DNS = append(pc.DNS, strings.ToLower(n))
	}
	return pc
}

// Fingerprint names the certificate in logs: "sha256:" and its digest.
func (pc *PeerCert) Fingerprint() string {
	if pc.fingerprint != "" {
		return pc.fingerprint
	}
	return "sha256:" + pc.SHA256
}

// CertMatch is which client a certificate names (Compiled.CallerByCert).
type CertMatch struct {
	// Caller is the client, nil when the certificate names none.
	Caller *Caller
	// Selector is the selector that matched, spelled as String does ("" for
	// none).
	Selector string
	// Other is, when the certificate's names of the deciding kind name two
	// clients, the second: the certificate is ambiguous and Caller must not
	// be trusted.
	Other *Caller
}

// CallerByCert returns which client pc names: the first kind of selector,
// in the order fingerprint, URI, DNS, common name, under which one of the
// certificate's parts is a client's. Two names of that kind that belong to
// different clients make an ambiguous match (CertMatch.Other).
func (c *Compiled) CallerByCert(pc *PeerCert) CertMatch {
	if pc == nil || len(c.byCert) == 0 {
		return CertMatch{}
	}
	if m := c.certMatch(CertSHA256, pc.SHA256); m.Caller != nil {
		return m
	}
	for _, set := range [...]struct {
		kind   CertKind
		values []string
	}{{CertURI, pc.URIs}, {CertDNS, pc.DNS}, {CertCN, []string{pc.CN}}} {
		var found CertMatch
		for _, v := range set.values {
			m := c.certMatch(set.kind, v)
			switch {
			case m.Caller == nil:
			case found.Caller == nil:
				found = m
			case found.Caller != m.Caller:
				found.Other = m.Caller
				return found
			}
		}
		if found.Caller != nil {
			return found
		}
	}
	return CertMatch{}
}

func (c *Compiled) certMatch(kind CertKind, value string) CertMatch {
	if value == "" {
		return CertMatch{}
	}
	if e, ok := c.byCert[CertSelector{Kind: kind, Value: value}]; ok {
		return CertMatch{Caller: e.caller, Selector: e.spelled}
	}
	return CertMatch{}
}

// certEntry is a selector's client, with the selector spelled once.
type certEntry struct {
	caller  *Caller
	spelled string
}

// IdentifiesByCert reports whether a client lists certificates.
func (c *Compiled) IdentifiesByCert() bool { return len(c.byCert) > 0 }
