package policy

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// HostError says why a request's host was refused by CleanHost: no rule
// could be sure to match what the upstream reads.
type HostError struct {
	// Reason says what the host holds, such as "an empty label".
	Reason string
}

func (e *HostError) Error() string { return "policy: request host has " + e.Reason }

// maxHost is the longest host name (RFC 1035: 253 characters without
// the trailing dot); an IP literal is shorter.
const maxHost = 253

// CleanHost returns the one spelling of a request's host that rules
// match (Match.Host), or a *HostError. raw is the host as the request
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
func CleanHost(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	if raw[0] == '[' {
		return cleanIPv6(raw)
	}
	host := raw
	if i := strings.LastIndexByte(raw, ':'); i >= 0 {
		if !digits(raw[i+1:]) {
			return "", &HostError{Reason: "a port that is not a number, or an IPv6 address outside brackets"}
		}
		host = raw[:i]
	}
	if isCleanHost(host) {
		return strings.TrimSuffix(host, "."), nil
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
func cleanHostSlow(host string) (string, error) {
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return "", &HostError{Reason: "no name before its port"}
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
			return "", &HostError{Reason: "an internationalised name that is not valid (IDNA): " + err.Error()}
		}
		host = a
	}
	if why := hostProblem(host); why != "" {
		return "", &HostError{Reason: why}
	}
	return host, nil
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
func cleanIPv6(raw string) (string, error) {
	end := strings.IndexByte(raw, ']')
	if end < 0 {
		return "", &HostError{Reason: "a '[' without its ']'"}
	}
	if rest := raw[end+1:]; rest != "" && (rest[0] != ':' || !digits(rest[1:])) {
		return "", &HostError{Reason: "something other than a port after its IPv6 address"}
	}
	addr, err := netip.ParseAddr(raw[1:end])
	if err != nil || !addr.Is6() || addr.Zone() != "" {
		return "", &HostError{Reason: "an IPv6 literal that is not an IPv6 address"}
	}
	return "[" + addr.String() + "]", nil
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

// hostPattern is a compiled Match.Host: an exact name, or the suffix a
// wildcard's names end in.
type hostPattern struct {
	name     string // the exact name; for a wildcard, ".example.com"
	wildcard bool
}

// matches reports whether host, as CleanHost returns it, is the pattern's.
func (p hostPattern) matches(host string) bool {
	if p.wildcard {
		return len(host) > len(p.name) && strings.HasSuffix(host, p.name)
	}
	return host == p.name
}

// ParseHostPattern reads a rule's host (Match.Host): an exact name
// ("api.example.com"), or "*." and a name ("*.example.com"), which matches
// every name below it, at any depth, never the name itself (nginx's
// server_name "*.example.com"). Letters in either case, one trailing dot,
// a name in Unicode (written as its ASCII form, punycode) and an IPv6
// literal in brackets are accepted, as CleanHost reads request hosts. It
// returns the pattern in the form it matches, or an error that says what
// would be accepted.
func ParseHostPattern(s string) (string, error) {
	p, why := parseHostPattern(s)
	if why != "" {
		return "", errors.New("policy: host " + strconv.Quote(s) + " has " + why)
	}
	if p.wildcard {
		return "*" + p.name, nil
	}
	return p.name, nil
}

// parseHostPattern is ParseHostPattern, with what is wrong as a reason
// ("" for nothing).
func parseHostPattern(s string) (hostPattern, string) {
	const want = "a host name such as api.example.com, or *.example.com for every name below example.com"
	wild := strings.HasPrefix(s, "*.")
	name := strings.TrimPrefix(s, "*.")
	switch {
	case s == "":
		return hostPattern{}, "no name (" + want + ")"
	case strings.Contains(name, "*"):
		return hostPattern{}, "a '*' other than a whole first label (" + want + ")"
	case strings.ContainsAny(s, "/@ \t") || strings.Count(s, ":") == 1 && !strings.HasPrefix(s, "["):
		return hostPattern{}, "a port, a path, a user or a space (" + want + "; the port is never matched)"
	case wild && strings.HasPrefix(name, "["):
		return hostPattern{}, "a '*' before an IPv6 address (" + want + ")"
	}
	if strings.HasPrefix(name, "[") && strings.Contains(name, "]:") {
		return hostPattern{}, "a port (" + want + "; the port is never matched)"
	}
	clean, err := CleanHost(name)
	if err != nil {
		return hostPattern{}, strings.TrimPrefix(err.Error(), "policy: request host has ") + " (" + want + ")"
	}
	if clean == "" {
		return hostPattern{}, "no name (" + want + ")"
	}
	if wild {
		return hostPattern{name: "." + clean, wildcard: true}, ""
	}
	return hostPattern{name: clean}, ""
}
