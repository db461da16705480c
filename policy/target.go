package policy

import (
	"fmt"
	"net/netip"
	"strings"
)

// The targets of overrides, as the API spells them: a client id, or ip:
// and an address range.

// Target names o's target as the API spells it: the client id, or "ip:"
// and the range (ip:203.0.113.0/24, ip:2001:db8::/48; a single address as
// /32 or /128). It is "" for an override without a target.
func (o Override) Target() string {
	if o.Client != "" {
		return o.Client
	}
	if !o.Addr.IsValid() {
		return ""
	}
	if p, msg := canonicalRange(o.Addr); msg == "" {
		return AddrTargetPrefix + p.String()
	}
	return AddrTargetPrefix + o.Addr.String()
}

// ParseTarget reads a target as the API spells it: a client id
// ("partner-a"), or ip: and an address or range ("ip:203.0.113.7",
// "ip:203.0.113.0/24", "ip:2001:db8::/48"). An IPv4-mapped IPv6 address
// or range is read as the IPv4 one, as callers' addresses are; a range
// with bits set beyond its length is refused, naming the range meant.
// Whether a client id is one of the policy's is WithOverrides' concern.
// The error is a *FieldError of Path "target".
func ParseTarget(s string) (client string, addr netip.Prefix, err error) {
	rest, isAddr := strings.CutPrefix(s, AddrTargetPrefix)
	if !isAddr {
		if !validName(s) {
			return "", netip.Prefix{}, targetError("%q is not a target (a client id: letters, digits, '_', '-', '.', 1 to 64; or ip:ADDR[/BITS], such as ip:203.0.113.0/24)", clipText(s))
		}
		return s, netip.Prefix{}, nil
	}
	p, msg := parseRange(rest)
	if msg != "" {
		return "", netip.Prefix{}, targetError("%s", msg)
	}
	return "", p, nil
}

// parseRange reads the ADDR[/BITS] of an address target, or says what is
// wrong with it.
func parseRange(s string) (netip.Prefix, string) {
	const accepted = "(an address or range: ip:203.0.113.7, ip:203.0.113.0/24, ip:2001:db8::/48)"
	if s == "" {
		return netip.Prefix{}, "ip: without an address " + accepted
	}
	var p netip.Prefix
	if strings.IndexByte(s, '/') >= 0 {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return netip.Prefix{}, fmt.Sprintf("%q is not an address range %s", clipText(s), accepted)
		}
	} else {
		a, err := netip.ParseAddr(s)
		switch {
		case err != nil:
			return netip.Prefix{}, fmt.Sprintf("%q is not an address %s", clipText(s), accepted)
		case a.Zone() != "":
			return netip.Prefix{}, fmt.Sprintf("%q has a zone, which no caller's address is counted with %s", clipText(s), accepted)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	return canonicalRange(p)
}

// canonicalRange returns p as callers' addresses are compared with it: an
// IPv4-mapped range as the IPv4 one. It says what is wrong with a range
// that is not valid, maps only part of IPv4, or has bits set beyond its
// length.
func canonicalRange(p netip.Prefix) (netip.Prefix, string) {
	if !p.IsValid() {
		return netip.Prefix{}, "not a valid address range (ip:203.0.113.7, ip:203.0.113.0/24, ip:2001:db8::/48)"
	}
	if a := p.Addr(); a.Is4In6() {
		if p.Bits() < 96 {
			return netip.Prefix{}, fmt.Sprintf("%s is an IPv4-mapped range shorter than /96, which holds addresses no caller is counted at (write the IPv4 range, such as ip:203.0.113.0/24)", p)
		}
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Sprintf("%s has bits set beyond its /%d (write ip:%s, or ip:%s for the one address)", p, p.Bits(), m, p.Addr())
	}
	return p, ""
}

func targetError(format string, args ...any) *FieldError {
	return &FieldError{Path: "target", Msg: fmt.Sprintf(format, args...)}
}

// clipText shortens what a caller sent for a message.
func clipText(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
