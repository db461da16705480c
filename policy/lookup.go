package policy

import (
	"net/netip"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sluice-rl/sluice/limiter"
)

// Policy returns the policy c was compiled from.
func (c *Compiled) Policy() Policy { return c.src }

// KeyHeader returns the header carrying access keys (default X-API-Key).
func (c *Compiled) KeyHeader() string {
	if c.src.Clients.KeyHeader == "" {
		return DefaultKeyHeader
	}
	return c.src.Clients.KeyHeader
}

// IdentifiesByKey reports whether callers are recognised by access key:
// true when the policy lists clients.
func (c *Compiled) IdentifiesByKey() bool { return len(c.src.Clients.List) > 0 }

// KeyName is the key header's name as an http.Header holds it
// (textproto.CanonicalMIMEHeaderKey of KeyHeader), "" when the policy
// identifies no caller by key.
func (c *Compiled) KeyName() string { return c.keyName }

// HeaderName is the name of the header rule i counts by (key:
// header:NAME) as an http.Header holds it, "" for a rule of another key.
func (c *Compiled) HeaderName(i int) string { return c.rules[i].headerName }

// CostHeaderName is the name of rule i's CostHeader as an http.Header
// holds it, "" for a rule without one.
func (c *Compiled) CostHeaderName(i int) string { return c.rules[i].costName }

// CallerByKey returns the client an access key belongs to.
func (c *Compiled) CallerByKey(key string) (*Caller, bool) {
	cl, ok := c.byKey[key]
	return cl, ok
}

// CallerByID returns the client with the given id.
func (c *Compiled) CallerByID(id string) (*Caller, bool) {
	cl, ok := c.byID[id]
	return cl, ok
}

// Anonymous returns the caller unknown callers count as, or nil when they
// are rejected.
func (c *Compiled) Anonymous() *Caller { return c.anonymous }

// Unidentified returns the caller used when the policy recognises nobody by
// key (no clients listed): every rule at its own rate.
func (c *Compiled) Unidentified() *Caller { return c.global }

// Rules returns the number of rules.
func (c *Compiled) Rules() int { return len(c.rules) }

// Rule returns rule i with its defaults filled in.
func (c *Compiled) Rule(i int) *Rule { return &c.rules[i].Rule }

// RuleLimit returns rule i's own limit, before plans and overrides.
func (c *Compiled) RuleLimit(i int) limiter.Limit { return c.global.limits[i] }

// Match appends to dst the indexes of the rules that match a request
// with neither host nor headers and returns it (MatchRequest). method is
// the request's method as CanonicalMethod spells it, path its decoded
// path as CleanPath returns it.
func (c *Compiled) Match(method, path string, dst []int) []int {
	return c.MatchRequest(&Request{Method: method, Path: path}, dst)
}

// MatchRequest appends to dst the indexes of the rules that match r and
// returns it.
func (c *Compiled) MatchRequest(r *Request, dst []int) []int {
	path, method := r.Path, r.Method
	for i := range c.matchers {
		m := &c.matchers[i]
		if m.more != nil || m.fold {
			if m.Matches(r) {
				dst = append(dst, i)
			}
			continue
		}
		// A case-sensitive path prefix and methods, the common case, is
		// decided here, without a call per rule: prefixMatches and
		// methodMatches written out.
		if p := m.prefix; p != "" && (!strings.HasPrefix(path, p) || len(path) > len(p) && path[len(p)] != '/') {
			continue
		}
		if methodMatches(m.methods, method) {
			dst = append(dst, i)
		}
	}
	return dst
}

// MatchesHost reports whether a rule matches on the request's host: a
// request must then name one (Request.Host).
func (c *Compiled) MatchesHost() bool { return c.byHost }

// MatchHeaderNames returns the canonical names of the headers rules match
// on (Match.Headers), each once; nil when none does. The caller must not
// change it.
func (c *Compiled) MatchHeaderNames() []string { return c.matchHeaders }

// methodMatches reports whether method is listed; a rule for GET also
// covers HEAD, which asks for the same resource.
func methodMatches(methods []string, method string) bool {
	return len(methods) == 0 || slices.Contains(methods, method) ||
		method == "HEAD" && slices.Contains(methods, "GET")
}

// prefixMatches reports whether prefix, without a trailing '/', matches
// path on segment boundaries: "/claims" matches "/claims" and "/claims/7",
// not "/claimsx". With fold, segments are compared regardless of case.
func prefixMatches(prefix, path string, fold bool) bool {
	if prefix == "" {
		return true
	}
	if fold {
		return foldPrefix(prefix, path)
	}
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	return len(path) == len(prefix) || path[len(prefix)] == '/'
}

// foldPrefix is pathMatches regardless of case. It compares segment by
// segment, as a letter and its other case may differ in length ("ſ" is two
// bytes and matches "s").
func foldPrefix(prefix, path string) bool {
	for prefix != "" {
		if path == "" || path[0] != '/' {
			return false
		}
		var want, got string
		want, prefix = cutSegment(prefix[1:])
		got, path = cutSegment(path[1:])
		if !foldEqual(want, got) {
			return false
		}
	}
	return true
}

// cutSegment splits s at its first '/': the segment, and the rest from the
// '/' on.
func cutSegment(s string) (seg, rest string) {
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// foldEqual reports whether a and b are equal regardless of case. It is
// wider than strings.EqualFold: a letter also equals whatever its upper
// case's lower case is, as "ı" (dotless i) upper-cases to "I", which
// ASP.NET's ordinal case-insensitive comparison then equates with "i".
// Bytes that are not UTF-8 compare as themselves.
func foldEqual(a, b string) bool {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		switch {
		case ra == utf8.RuneError && na == 1 || rb == utf8.RuneError && nb == 1:
			if na != nb || a[0] != b[0] {
				return false
			}
		case ra != rb && foldRune(ra) != foldRune(rb):
			return false
		}
		a, b = a[na:], b[nb:]
	}
	return a == b
}

// foldRune is the lower case of r's upper case: one rune for every member
// of a case orbit ("K", "k" and the Kelvin sign; "S", "s" and "ſ").
func foldRune(r rune) rune { return unicode.ToLower(unicode.ToUpper(r)) }

// Exempt reports whether rule i's allow list exempts a caller with client
// id (may be "") from address addr (may be invalid).
func (c *Compiled) Exempt(i int, id string, addr netip.Addr) bool {
	r := &c.rules[i]
	if id != "" && r.allowIDs[id] {
		return true
	}
	return addr.IsValid() && containsAddr(r.AllowNets, addr)
}

// IPKey returns the part of addr a rule counts by: the whole IPv4 address,
// or the IPv6 address's leading IPv6Prefix bits (default /64), in text.
func (c *Compiled) IPKey(addr netip.Addr) string {
	addr = addr.Unmap()
	if addr.Is4() || !addr.IsValid() {
		return addr.String()
	}
	p, err := addr.WithZone("").Prefix(c.ipv6Bits)
	if err != nil {
		return addr.String()
	}
	return p.String()
}
