package policy

import (
	"net/textproto"
	"strings"
)

// HeaderMatch is one header a Match requires.
type HeaderMatch struct {
	// Name is the header's name, in any case ("X-Env", "x-env").
	Name string
	// Value is the value the header must have, compared exactly (case
	// matters); ignored with Present.
	Value string
	// Present requires only that the header is sent, with any value
	// (empty included).
	Present bool
}

// HeaderValues reads a request's header fields for a Matcher (the
// Values method of decision.Headers): it appends to dst the value of every
// field line named name, in canonical form (X-Env), and returns dst.
type HeaderValues interface {
	Values(dst []string, name string) []string
}

// Request is the cleaned request a Matcher decides on: every field in the
// one spelling the request is sent on in, so that no other spelling of
// it escapes a match.
type Request struct {
	// Method as CanonicalMethod spells it.
	Method string
	// Path is the decoded path as CleanPath returns it.
	Path string
	// Host is the request's host as CleanHost returns it; "" when it
	// names none.
	Host string
	// Header reads the request's header fields; nil reads as none.
	Header HeaderValues

	vals []string // scratch for Header's values
}

// Matcher is a compiled Match: it decides which requests a rule (or
// another part of the configuration that selects requests) applies to.
// The zero Matcher matches every request. It is immutable and safe for
// concurrent use.
type Matcher struct {
	prefix  string // Path without its trailing '/', when it has no '*' segment
	methods []string
	fold    bool        // CaseInsensitivePaths
	more    *matchExtra // nil for a path and methods alone, the common case
}

// matchExtra is what a Matcher matches beyond a path prefix and methods.
type matchExtra struct {
	segs    []string // Path's segments when it has a '*' segment, "*" among them
	host    hostPattern
	hasHost bool
	headers []headerMatch
}

type headerMatch struct {
	name    string // canonical
	value   string
	present bool
}

// CompileMatch checks m and compiles it; fold matches paths regardless of
// case (Policy.CaseInsensitivePaths). at names the match in errors, as
// configuration spells it ("rules[2]"); every problem is reported
// through fail, with the path of the field at fault.
func CompileMatch(at string, m Match, fold bool, fail func(path, format string, args ...any)) Matcher {
	checkMatch(at, m, fail)
	mt := Matcher{prefix: strings.TrimSuffix(m.Path, "/"), fold: fold, methods: m.Methods}
	x := &matchExtra{}
	if hasWildSegment(m.Path) {
		x.segs = strings.Split(strings.Trim(m.Path, "/"), "/")
	}
	if m.Host != "" {
		p, why := parseHostPattern(m.Host)
		if why != "" {
			fail(at+".match.host", "%q has %s", m.Host, why)
		}
		x.host, x.hasHost = p, true
	}
	for _, h := range m.Headers {
		path := at + ".match.headers." + h.Name
		switch {
		case !validHeaderName(h.Name):
			fail(path, "%q is not a valid HTTP header name", h.Name)
		case textproto.CanonicalMIMEHeaderKey(h.Name) == "Host":
			fail(path, "the host is matched by match.host (host: api.example.com), which reads it as the upstream does")
		case uncountedHeader(h.Name) != "":
			fail(path, "%s", strings.Replace(uncountedHeader(h.Name), "requests cannot be told apart", "no request matches", 1))
		case !h.Present && h.Value == "":
			fail(path, "an empty value never matches (a value such as prod, or {present: true} for any value)")
		case !h.Present && strings.TrimSpace(h.Value) != h.Value:
			fail(path, "%q has spaces around it, which a request's value never has (write %q)", h.Value, strings.TrimSpace(h.Value))
		case !h.Present && strings.ContainsFunc(h.Value, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }):
			fail(path, "%q has a control character, which a request's value never has", h.Value)
		}
		x.headers = append(x.headers, headerMatch{name: textproto.CanonicalMIMEHeaderKey(h.Name), value: h.Value, present: h.Present})
	}
	if x.segs != nil || x.hasHost || len(x.headers) > 0 {
		mt.more = x
	}
	return mt
}

// hasWildSegment reports whether path has a segment that is "*".
func hasWildSegment(path string) bool {
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "*" {
			return true
		}
	}
	return false
}

// checkWildPath reports a '*' that is not a whole segment.
func checkWildPath(at, path string, fail func(string, string, ...any)) {
	for seg := range strings.SplitSeq(path, "/") {
		if seg != "*" && strings.Contains(seg, "*") {
			fail(at+".match.path", "%q has a '*' inside a segment (%q): a '*' stands for one whole segment, as in /claims/*/documents", path, seg)
			return
		}
	}
}

// MatchesHost reports whether m matches on the request's host.
func (m *Matcher) MatchesHost() bool { return m.more != nil && m.more.hasHost }

// HeaderNames appends to dst the canonical names of the headers m
// matches on and returns it.
func (m *Matcher) HeaderNames(dst []string) []string {
	if m.more == nil {
		return dst
	}
	for _, h := range m.more.headers {
		dst = append(dst, h.name)
	}
	return dst
}

// Matches reports whether m matches r. It may use r's scratch space: a
// Request is not for concurrent use.
//
// A header that a request sends twice, or as a comma-separated list,
// matches a value when any of its values (or any list element) is that
// value: sending it once more never takes a request out of a match.
func (m *Matcher) Matches(r *Request) bool {
	if m.more == nil {
		return prefixMatches(m.prefix, r.Path, m.fold) && methodMatches(m.methods, r.Method)
	}
	x := m.more
	if x.segs != nil {
		if !segmentsMatch(x.segs, r.Path, m.fold) {
			return false
		}
	} else if !prefixMatches(m.prefix, r.Path, m.fold) {
		return false
	}
	if !methodMatches(m.methods, r.Method) || x.hasHost && !x.host.matches(r.Host) {
		return false
	}
	for i := range x.headers {
		if !x.headers[i].matches(r) {
			return false
		}
	}
	return true
}

// segmentsMatch reports whether the pattern's segments match path's
// first segments, "*" matching any one non-empty segment.
func segmentsMatch(segs []string, path string, fold bool) bool {
	for _, want := range segs {
		if path == "" || path[0] != '/' {
			return false
		}
		var got string
		got, path = cutSegment(path[1:])
		switch {
		case want == "*":
			if got == "" {
				return false
			}
		case fold:
			if !foldEqual(want, got) {
				return false
			}
		case want != got:
			return false
		}
	}
	return true
}

// matches reports whether the request carries the header as h requires.
func (h *headerMatch) matches(r *Request) bool {
	if r.Header == nil {
		return false
	}
	r.vals = r.Header.Values(r.vals[:0], h.name)
	if h.present {
		return len(r.vals) > 0
	}
	for _, v := range r.vals {
		if listHas(v, h.value) {
			return true
		}
	}
	return false
}

// listHas reports whether v, one field line's value, is want or holds it
// as an element of a comma-separated list (RFC 9110 section 5.6.1).
func listHas(v, want string) bool {
	v = strings.Trim(v, " \t")
	if v == want {
		return true
	}
	if !strings.Contains(v, ",") {
		return false
	}
	for e := range strings.SplitSeq(v, ",") {
		if strings.Trim(e, " \t") == want {
			return true
		}
	}
	return false
}
