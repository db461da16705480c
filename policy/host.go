package policy

import (
	"errors"
	"strconv"
	"strings"

	"github.com/sluice-rl/sluice/internal/httpname"
)

// HostError says why a request's host was refused by CleanHost: no rule
// could be sure to match what the upstream reads.
type HostError struct {
	// Reason says what the host holds, such as "an empty label".
	Reason string
}

func (e *HostError) Error() string { return "policy: request host has " + e.Reason }

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
// that is not digits, and an IPv6 literal that is not an address. The
// gateway's transport reads hosts by the same code (internal/httpname).
func CleanHost(raw string) (string, error) {
	host, reason := httpname.CleanHost(raw)
	if reason != "" {
		return "", &HostError{Reason: reason}
	}
	return host, nil
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
