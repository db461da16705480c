package decision

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/sluice-rl/sluice/policy"
)

// maxHops bounds how many proxy hops are read from the forwarded header, so
// a forged header of thousands of entries costs nothing.
const maxHops = 32

// identify returns the caller of v's request, or nil if the policy rejects
// it (an unknown or missing key with unknown: reject, and no certificate
// naming a client). key is the key header's canonical name. A key header
// sent more than once, or holding a list that is not itself a key, is an
// error: an upstream may read one of its keys while sluice counted none
// (Go's Header.Get reads the first, Node.js joins them with ", "). So is a
// key that is not the key of the client the caller's certificate names
// (certCaller).
func identify(pol *policy.Compiled, v *Verdict, key string) (*policy.Caller, error) {
	if !pol.IdentifiesByKey() {
		if v.req.Cert != nil {
			v.Report.Cert = v.req.Cert.Fingerprint()
		}
		if a := pol.Anonymous(); a != nil {
			return a, nil // unknown: anonymous and no clients: everyone is unknown
		}
		return pol.Unidentified(), nil
	}
	byCert, err := certCaller(pol, v)
	if err != nil {
		return nil, err
	}
	vals := v.values(key)
	switch len(vals) {
	case 0:
		if byCert != nil {
			return byCert, nil
		}
		return pol.Anonymous(), nil
	case 1:
	default:
		return nil, fmt.Errorf("%s sent %d times (send one access key, once)", pol.KeyHeader(), len(vals))
	}
	c, ok := pol.CallerByKey(vals[0])
	switch {
	case byCert != nil && c == byCert:
		return c, nil
	case byCert != nil && ok:
		return nil, fmt.Errorf("the client certificate names client %s and the access key in %s client %s: they disagree "+
			"(send %s's key, or none)", byCert.ID, pol.KeyHeader(), c.ID, byCert.ID)
	case byCert != nil:
		return nil, fmt.Errorf("the client certificate names client %s, and the access key in %s is no client's "+
			"(send %s's key, or none)", byCert.ID, pol.KeyHeader(), byCert.ID)
	case ok:
		return c, nil
	}
	if strings.IndexByte(vals[0], ',') >= 0 {
		return nil, fmt.Errorf("%s holds a list (send one access key)", pol.KeyHeader())
	}
	a := pol.Anonymous()
	if a != nil {
		v.unknownKey()
	}
	return a, nil
}

// certCaller returns the client the caller's verified certificate
// (Request.Cert) names under pol, nil for none, and notes in the Report
// how the certificate was read: the selector that matched, else its
// fingerprint. A certificate whose names are two clients' is an error.
func certCaller(pol *policy.Compiled, v *Verdict) (*policy.Caller, error) {
	pc := v.req.Cert
	if pc == nil {
		return nil, nil
	}
	m := pol.CallerByCert(pc)
	if m.Caller == nil {
		v.Report.Cert = pc.Fingerprint()
		return nil, nil
	}
	v.Report.Cert = m.Selector
	if m.Other != nil {
		return nil, fmt.Errorf("the client certificate names two clients, %s (%s) and %s (a certificate names one client)",
			m.Caller.ID, m.Selector, m.Other.ID)
	}
	return m.Caller, nil
}

// UnknownKeyHeader is the response field that tells a caller counted as
// anonymous (clients.unknown: anonymous) that the access key it sent is no
// listed client's: "X-Sluice-Key: unknown". A mistyped key is then seen,
// not silently given the anonymous limits.
const UnknownKeyHeader = "X-Sluice-Key"

var unknownKeyValue = []byte("unknown")

// unknownKey marks v's request as one whose access key is no listed
// client's, counted as anonymous: Report.UnknownKey, and the
// UnknownKeyHeader on its answer, whether it passes or not.
func (v *Verdict) unknownKey() {
	v.Report.UnknownKey = true
	v.Header = append(v.Header, Field{Name: UnknownKeyHeader, Value: unknownKeyValue})
}

// clientAddr returns the caller's IP address: the peer's, unless the peer is
// a trusted proxy (v.PeerTrusted), in which case the right-most address of
// the policy's forwarded header (X-Forwarded-For or Forwarded) that is not
// itself a trusted proxy. It returns the zero Addr if the peer is unknown.
func clientAddr(pol *policy.Compiled, v *Verdict) netip.Addr {
	v.PeerTrusted = false
	if !v.req.Peer.IsValid() {
		return netip.Addr{}
	}
	addr := v.req.Peer.Addr().Unmap().WithZone("")
	if !pol.TrustedProxy(addr) {
		return addr
	}
	v.PeerTrusted = true
	var room [maxHops]string
	for _, h := range forwardedFor(room[:0], v, pol.ForwardedHeader()) {
		hop, ok := parseHop(h)
		if !ok {
			return addr // a hop we cannot read: count the proxy that sent it
		}
		addr = hop
		if !pol.TrustedProxy(addr) {
			return addr
		}
	}
	return addr
}

// forwardedFor appends to dst at most maxHops hops of the policy's header,
// the nearest first: the values of X-Forwarded-For, or the for= values of
// Forwarded (RFC 7239). The other header is never read: a proxy that appends to one
// passes the other on from the client untouched, and believing it would
// let the client choose the address it is counted under. It reads from the
// right, so a forged header of thousands of entries costs no more than
// maxHops.
func forwardedFor(dst []string, v *Verdict, from policy.ForwardedHeader) []string {
	if from == policy.Forwarded {
		return lastHops(dst, v.values("Forwarded"), forValue)
	}
	return lastHops(dst, v.values("X-Forwarded-For"), strings.TrimSpace)
}

// lastHops walks the comma-separated elements of lines from the last one
// backwards and appends to hops what pick finds in each (skipping ""), at
// most maxHops.
func lastHops(hops []string, lines []string, pick func(string) string) []string {
	for i := len(lines) - 1; i >= 0 && len(hops) < maxHops; i-- {
		rest := lines[i]
		for len(hops) < maxHops {
			j := strings.LastIndexByte(rest, ',')
			if v := pick(rest[j+1:]); v != "" {
				hops = append(hops, v)
			}
			if j < 0 {
				break
			}
			rest = rest[:j]
		}
	}
	return hops
}

// forValue returns the for= parameter of one Forwarded element, or "".
func forValue(elem string) string {
	for pair := range strings.SplitSeq(elem, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok && strings.EqualFold(k, "for") {
			return v
		}
	}
	return ""
}

// parseHop reads one forwarded address: 192.0.2.1, "[2001:db8::1]:4711",
// 192.0.2.1:80. Obfuscated identifiers and "unknown" are not addresses. A
// bare address, the usual X-Forwarded-For hop, is tried first: each failed
// parse costs an error.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.Trim(strings.TrimSpace(s), `"`)
	a, err := netip.ParseAddr(s)
	if err != nil {
		if ap, err := netip.ParseAddrPort(s); err == nil {
			a = ap.Addr()
		} else if a, err = netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err != nil {
			return netip.Addr{}, false
		}
	}
	return a.Unmap().WithZone(""), true
}
