// Package httpname holds the few facts about HTTP names that every part of
// sluice reads alike, from the policy that compiles rules down to the
// gateway's transport: the hop-by-hop fields a proxy never passes on
// (HopByHop), the header names an upstream reads as one (SameHeader), and
// the one spelling of a request's host that rules match (CleanHost). It
// imports only the standard library and golang.org/x/net/idna, so that a
// package as low as the transport reads them from one place.
package httpname

import (
	"net/netip"
	"strings"

	"golang.org/x/net/idna"
)

// hopByHop are the fields that describe one connection, never the request
// (RFC 9110 section 7.6.1, with the Proxy-Connection and Keep-Alive of
// older proxies, as net/http's ReverseProxy removes them): a proxy passes
// none of them on, neither to the upstream nor back to the caller. The one
// list every part of sluice reads (HopByHop).
var hopByHop = [...]string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// HopByHop reports whether name (in any case) is a hop-by-hop header, which
// a proxy removes: a caller's never reaches the upstream, and the
// upstream's would never reach sluice. It allocates nothing, so the
// gateway calls it for every field it passes on.
func HopByHop(name string) bool {
	for _, h := range hopByHop {
		if len(h) == len(name) && strings.EqualFold(h, name) {
			return true
		}
	}
	return false
}

// SameHeader reports whether two header names are the same to some
// upstream: equal regardless of case, with '_' and '-' alike, as
// CGI-style upstreams (PHP, WSGI, Rack) read X-API-Key and X_API_KEY both
// as HTTP_X_API_KEY.
func SameHeader(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if foldName(a[i]) != foldName(b[i]) {
			return false
		}
	}
	return true
}

func foldName(c byte) byte {
	switch {
	case c >= 'A' && c <= 'Z':
		return c + 'a' - 'A'
	case c == '_':
		return '-'
	}
	return c
}

// maxHost is the longest host name (RFC 1035: 253 characters without
// the trailing dot); an IP literal is shorter.
const maxHost = 253

// CleanHost returns the one spelling of a request's host that rules
// match (policy.Match.Host), or, host "", the reason it is refused (what
// the host has, such as "an empty label"); reason "" when it is not. raw is the host as the request
// names it: its Host field, or the authority of an absolute-form request
// target, which wins (RFC 9112 section 3.2.2). The port is dropped,
// ASCII letters are lower-cased, one trailing dot is dropped
// ("API.Example.com.:8443" is "api.example.com"), an internationalised
// name in Unicode is converted to its ASCII form (punycode: "bücher.example"
// is "xn--bcher-kva.example"), and an IPv6 literal is written as
// netip.Addr does, in brackets ("[2001:DB8::0001]" is "[2001:db8::1]").
// "" is "" (no host). Refused: an empty label ("a..b", ".a", "a.."), a
// byte other than letters, digits, '-', '_' and '.' (after the Unicode
// conversion), a name over 253 characters or a label over 63, a port
// that is not digits, and an IPv6 literal that is not an address.
func CleanHost(raw string) (host, reason string) {
	if raw == "" {
		return "", ""
	}
	if raw[0] == '[' {
		return cleanIPv6(raw)
	}
	host = raw
	if i := strings.LastIndexByte(raw, ':'); i >= 0 {
		if !digits(raw[i+1:]) {
			return "", "a port that is not a number, or an IPv6 address outside brackets"
		}
		host = raw[:i]
	}
	if isCleanHost(host) {
		return strings.TrimSuffix(host, "."), ""
	}
	return cleanHostSlow(host)
}

// isCleanHost reports whether host is already in CleanHost's form, but
// perhaps for one trailing dot: lower-case ASCII letters, digits, '-',
// '_', and dots between labels of 1 to 63. Most hosts are, and cost no
// allocation.
func isCleanHost(host string) bool {
	if host == "" || len(host) > maxHost && (len(host) > maxHost+1 || host[maxHost] != '.') {
		return false
	}
	label := 0
	for i := 0; i < len(host); i++ {
		switch c := host[i]; {
		case c == '.':
			if label == 0 {
				return false
			}
			label = 0
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_':
			label++
			if label > 63 {
				return false
			}
		default:
			return false
		}
	}
	return true // a trailing dot follows a label: the '.' case saw one
}

// cleanHostSlow is CleanHost for a host (without its port) that needs
// work: upper case, Unicode, or something to refuse.
func cleanHostSlow(host string) (clean, reason string) {
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return "", "no name before its port"
	}
	ascii := true
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		host = strings.ToLower(host)
	} else {
		a, err := toASCII(host)
		if err != nil {
			return "", "an internationalised name that is not valid (IDNA): " + err.Error()
		}
		host = a
	}
	if why := hostProblem(host); why != "" {
		return "", why
	}
	return host, ""
}

// toASCII converts an internationalised host name to its ASCII form,
// labels lower-cased and mapped as browsers resolve them (UTS 46).
func toASCII(host string) (string, error) {
	return idnaProfile.ToASCII(host)
}

// idnaProfile reads host names as a resolver looks them up (UTS 46
// mapping, transitional processing off, as current browsers do), without
// refusing '_' (some service names hold one).
var idnaProfile = idna.New(idna.MapForLookup(), idna.Transitional(false), idna.StrictDomainName(false), idna.BidiRule())

// hostProblem says what is wrong with a lower-case ASCII host name, ""
// for nothing.
func hostProblem(host string) string {
	if len(host) > maxHost {
		return "more than 253 characters"
	}
	for label := range strings.SplitSeq(host, ".") {
		switch {
		case label == "":
			return "an empty label (\"..\", or a dot at the start or two at the end)"
		case len(label) > 63:
			return "a label of more than 63 characters"
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "a character a host name has none of (" + describeHostByte(c) + ")"
			}
		}
	}
	return ""
}

// describeHostByte names a byte of a refused host.
func describeHostByte(c byte) string {
	if c <= ' ' || c >= 0x7f {
		return "a byte 0x" + string(upperHex[c>>4]) + string(upperHex[c&15])
	}
	return "'" + string(c) + "'"
}

// cleanIPv6 is CleanHost for "[addr]" or "[addr]:port".
func cleanIPv6(raw string) (host, reason string) {
	end := strings.IndexByte(raw, ']')
	if end < 0 {
		return "", "a '[' without its ']'"
	}
	if rest := raw[end+1:]; rest != "" && (rest[0] != ':' || !digits(rest[1:])) {
		return "", "something other than a port after its IPv6 address"
	}
	addr, err := netip.ParseAddr(raw[1:end])
	if err != nil || !addr.Is6() || addr.Zone() != "" {
		return "", "an IPv6 literal that is not an IPv6 address"
	}
	return "[" + addr.String() + "]", ""
}

// digits reports whether s is empty or decimal digits only (a port; RFC
// 3986 lets it be empty).
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) <= 5
}

// upperHex are the digits describeHostByte writes.
const upperHex = "0123456789ABCDEF"
