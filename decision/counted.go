package decision

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"strconv"
	"strings"

	"github.com/sluice-rl/sluice/policy"
)

// headerValue returns the value header:NAME rule i counts by, and whether
// the request lacks it (absent or empty: the transport trims the blanks
// around a value). Of several values the first counts. It reads by the
// name policy.Compiled.HeaderName canonicalised once per policy.
func headerValue(pol *policy.Compiled, i int, v *Verdict) (string, bool) {
	vs := v.values(pol.HeaderName(i))
	if len(vs) == 0 {
		return "", true
	}
	return vs[0], vs[0] == ""
}

// headerRefused checks the headers the matched header:NAME rules count by
// (the rules in v.index and v.leaseIndex: matched, not exempt) and returns the problem
// detail of a 400 if the request cannot be counted one way only: an
// enforcing rule's header sent more than once (Go's Header.Get reads the
// first, Node.js joins them with ", ", so the upstream may read a value
// sluice did not count), or missing under missing_header: reject. It also
// removes every respelling of a counted header (X_Tenant for X-Tenant),
// which CGI-style upstreams read as the same header although sluice did
// not count it. A shadow rule refuses nothing: it counts the first value.
func (v *Verdict) headerRefused(pol *policy.Compiled) (detail string, refused bool) {
	for _, i := range v.index {
		if detail, refused := v.headerRefusedBy(pol, i); refused {
			return detail, true
		}
	}
	for _, i := range v.leaseIndex {
		if detail, refused := v.headerRefusedBy(pol, i); refused {
			return detail, true
		}
	}
	return "", false
}

// headerRefusedBy is headerRefused for rule i.
func (v *Verdict) headerRefusedBy(pol *policy.Compiled, i int) (detail string, refused bool) {
	r := pol.Rule(i)
	if r.Key.Kind != policy.KeyHeader {
		return "", false
	}
	name := pol.HeaderName(i)
	for _, k := range v.names {
		if !strings.EqualFold(k, name) && policy.SameHeaderName(k, name) {
			v.remove(k)
		}
	}
	if r.Mode != policy.Enforce {
		return "", false
	}
	if n := len(v.values(name)); n > 1 {
		return name + " sent " + strconv.Itoa(n) + " times; rule " + r.Name + " counts requests by it (send it once)", true
	}
	if _, missing := headerValue(pol, i, v); missing && r.Key.Missing == policy.MissingReject {
		return "missing header " + r.Key.Header + ", by which rule " + r.Name + " counts requests", true
	}
	return "", false
}

// counted names what rule counted for this request, for a 429's detail and
// the log: the client id, the address (an IPv6 network for grouped
// addresses), `header X-Tenant "acme"`, or all callers together. It never
// names an access key (see shownValue).
func counted(pol *policy.Compiled, c *policy.Caller, i int, addr netip.Addr, v *Verdict) string {
	rule := pol.Rule(i)
	switch rule.Key.Kind {
	case policy.KeyClient:
		if c.ID != "" {
			return c.ID
		}
		return address(pol, addr) // a caller without an id is counted by IP
	case policy.KeyIP:
		return address(pol, addr)
	case policy.KeyHeader:
		val, missing := headerValue(pol, i, v)
		switch {
		case !missing:
			return "header " + rule.Key.Header + " " + shownValue(pol, rule.Key.Header, val)
		case rule.Key.Missing == policy.MissingIP:
			return address(pol, addr) + " (without header " + rule.Key.Header + ")"
		}
		return "requests without header " + rule.Key.Header
	}
	return "all callers together"
}

// address names the caller's address as an ip rule counts it.
func address(pol *policy.Compiled, addr netip.Addr) string {
	if addr.IsValid() {
		return pol.IPKey(addr)
	}
	return "caller"
}

// maxShownValue is the longest header value a detail or log line shows as
// it is.
const maxShownValue = 64

// shownValue is how a header value appears in a detail or a log line:
// quoted when it is short printable ASCII; withheld when it may be a
// secret (the header is the access key's, or is named like a credential,
// or the value is a listed access key or a bearer token or JWT); otherwise
// (long, binary, control characters) as a fingerprint, sha256: and 16 hex
// digits, which shows no byte of it and cannot break a log line.
func shownValue(pol *policy.Compiled, name, v string) string {
	if secretName(pol, name) || secretValue(pol, v) {
		return "(value withheld)"
	}
	if len(v) <= maxShownValue && printable(v) {
		return strconv.Quote(v)
	}
	sum := sha256.Sum256([]byte(v))
	return "sha256:" + hex.EncodeToString(sum[:8])
}

// secretWords, in a header's name, say that it may carry a credential.
var secretWords = [...]string{"key", "token", "secret", "auth", "pass", "cookie", "session", "signature", "credential", "jwt", "bearer"}

// secretName reports whether a header of this name may carry a secret: the
// access key header (in any spelling) or a name with a secretWords word.
func secretName(pol *policy.Compiled, name string) bool {
	if policy.SameHeaderName(name, pol.KeyHeader()) {
		return true
	}
	lower := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// secretValue reports whether v looks like a credential: a listed access
// key, an Authorization-style value (Bearer, Basic) or a JWT.
func secretValue(pol *policy.Compiled, v string) bool {
	if _, ok := pol.CallerByKey(v); ok {
		return true
	}
	lower := strings.ToLower(v)
	if strings.HasPrefix(lower, "bearer ") || strings.HasPrefix(lower, "basic ") {
		return true
	}
	return strings.HasPrefix(v, "eyJ") && strings.Count(v, ".") == 2
}

// printable reports whether s is printable ASCII, spaces included.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
