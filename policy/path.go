package policy

import (
	"fmt"
	"strings"
)

// PathError says why a request path was refused by CleanPath: it spells
// something that upstreams read in different ways, so no rule could be
// sure to match what the upstream serves.
type PathError struct {
	// Reason says what the path contains and why that is refused, such as
	// `an encoded "/" (%2F): upstreams disagree on what it means`.
	Reason string
}

func (e *PathError) Error() string { return "policy: request path has " + e.Reason }

// CleanPath returns the one spelling of a request path that rules match and
// that the upstream must receive, or a *PathError. raw is the path as the
// request carries it, percent-encoded, without the query (net/url's
// EscapedPath). escaped is the path to send on; decoded is escaped with
// every percent-encoding decoded, the form rules are matched against
// (Match). CleanPath is idempotent: cleaning escaped gives escaped again.
//
// It reads the path the way the most lenient common upstreams do, so that
// none of them serves a path that sluice matched as another:
//   - ";" starts parameters that Tomcat, Jetty and Spring drop from a
//     segment: "/claims;jsessionid=1/7" and "/x/..;/claims" are read as
//     "/claims/7" and "/claims", and sent on without the parameters;
//   - percent-encoded unreserved characters are decoded ("/%63laims" is
//     "/claims"), other encodings are kept with upper-case hex digits, and
//     characters that must be encoded in a path are encoded;
//   - "." and ".." segments are resolved (RFC 3986 section 5.2.4) and empty
//     segments ("//") dropped: "/x/../claims" is "/claims", "/claims/.."
//     is "/"; a trailing "/" stays.
//
// Refused, because upstreams disagree on what they mean: an encoded "/",
// "\", ";", "?", "#" or "%" (%2F, %5C, %3B, %3F, %23, %25); a "\", "#" or
// "?" itself (a path read from a request line never holds the last two);
// control characters; a malformed percent-encoding; and a path that does
// not start with "/" (other than "", which is "/").
func CleanPath(raw string) (escaped, decoded string, err error) {
	if raw == "" {
		return "/", "/", nil
	}
	if raw[0] != '/' {
		return "", "", &PathError{Reason: "no leading '/' (only absolute paths are served)"}
	}
	if isClean(raw) {
		return raw, raw, nil
	}
	return cleanSlow(raw)
}

// isClean reports whether raw is already in the form CleanPath returns:
// only characters that stand for themselves, no empty, "." or ".."
// segment. Most paths are, and cost no allocation.
func isClean(raw string) bool {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '/' {
			rest := raw[i+1:]
			if rest != "" && (rest[0] == '/' || dotSegment(rest)) {
				return false
			}
			continue
		}
		if plain[c] != keep {
			return false
		}
	}
	return true
}

// dotSegment reports whether rest (what follows a '/') starts with a "."
// or ".." segment.
func dotSegment(rest string) bool {
	seg, _, _ := strings.Cut(rest, "/")
	return seg == "." || seg == ".."
}

// byteClass says what CleanPath does with a byte met in a raw path.
type byteClass uint8

const (
	escape  byteClass = iota // must be percent-encoded on the wire
	keep                     // stands for itself (unreserved, sub-delims but ';', ':', '@')
	refuse                   // refused wherever it appears: '\', '#', '?', controls
	special                  // '%' and ';': handled by the parser
)

// plain classifies every byte of a raw path.
var plain = func() (t [256]byteClass) {
	for c := 0; c < 256; c++ {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			strings.IndexByte("-._~!$&'()*+,=:@", byte(c)) >= 0:
			t[c] = keep
		case c < 0x20 || c == 0x7f || c == '\\' || c == '#' || c == '?':
			t[c] = refuse
		case c == '%' || c == ';':
			t[c] = special
		}
	}
	return t
}()

// unreserved reports whether c is an RFC 3986 unreserved character, whose
// percent-encoding means the same as c itself.
func unreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// cleanSlow is CleanPath for a path that needs work.
func cleanSlow(raw string) (string, string, error) {
	type seg struct{ esc, dec string }
	var segs []seg
	trailing := false
	for part := range strings.SplitSeq(raw[1:], "/") {
		part, _, _ = strings.Cut(part, ";") // parameters never hide a segment
		esc, dec, err := cleanSegment(part)
		if err != nil {
			return "", "", err
		}
		switch dec {
		case "", ".":
			trailing = true
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
			trailing = true
		default:
			segs = append(segs, seg{esc, dec})
			trailing = false
		}
	}
	if len(segs) == 0 {
		return "/", "/", nil
	}
	var e, d strings.Builder
	e.Grow(len(raw))
	d.Grow(len(raw))
	for _, s := range segs {
		e.WriteByte('/')
		e.WriteString(s.esc)
		d.WriteByte('/')
		d.WriteString(s.dec)
	}
	if trailing {
		e.WriteByte('/')
		d.WriteByte('/')
	}
	return e.String(), d.String(), nil
}

const upperHex = "0123456789ABCDEF"

// cleanSegment returns one segment (without parameters) encoded the one
// way CleanPath sends it, and decoded.
func cleanSegment(s string) (esc, dec string, err error) {
	e := make([]byte, 0, len(s))
	d := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch plain[c] {
		case keep:
			e, d = append(e, c), append(d, c)
			continue
		case refuse:
			return "", "", &PathError{Reason: describe(c, false)}
		case escape:
			e, d = append(e, '%', upperHex[c>>4], upperHex[c&15]), append(d, c)
			continue
		}
		// '%' (a raw ';' was cut off by the caller)
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", "", &PathError{Reason: "a malformed percent-encoding (% not followed by two hex digits)"}
		}
		b := unhex(s[i+1])<<4 | unhex(s[i+2])
		i += 2
		switch {
		case unreserved(b):
			e = append(e, b)
		case plain[b] == refuse || b == '/' || b == ';' || b == '%':
			return "", "", &PathError{Reason: describe(b, true)}
		default:
			e = append(e, '%', upperHex[b>>4], upperHex[b&15])
		}
		d = append(d, b)
	}
	return string(e), string(d), nil
}

// describe names a refused byte for a PathError.
func describe(c byte, encoded bool) string {
	what := fmt.Sprintf("%q", string(rune(c)))
	if c < 0x20 || c == 0x7f {
		what = fmt.Sprintf("a control character (0x%02X)", c)
	}
	if encoded {
		return fmt.Sprintf("an encoded %s (%%%02X): upstreams disagree on what it means", what, c)
	}
	return fmt.Sprintf("%s: upstreams disagree on what it means", what)
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// CanonicalMethod returns method in upper case. Methods are case-sensitive
// (RFC 9110), but some upstreams (Werkzeug, for one) serve "get" as GET:
// sluice matches and sends on the upper-case spelling, so that the method a
// rule counted is the one the upstream receives.
func CanonicalMethod(method string) string {
	for i := 0; i < len(method); i++ {
		if c := method[i]; c >= 'a' && c <= 'z' {
			return strings.ToUpper(method)
		}
	}
	return method
}
