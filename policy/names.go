package policy

import (
	"net/textproto"
	"slices"
)

// validName reports whether s is a usable rule, client or plan name: 1 to 64
// letters, digits, '_', '-' or '.'.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// validKey reports whether s can be an access key: 1 to 256 visible ASCII
// characters, so that it can travel in a header unchanged.
func validKey(s string) bool {
	if len(s) == 0 || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// validHeaderName reports whether s is an HTTP field name (RFC 9110 token).
func validHeaderName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || isTokenPunct(c)) {
			return false
		}
	}
	return true
}

func isTokenPunct(c byte) bool {
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// connectionFields are the fields that describe one connection, not the
// request (RFC 9110 section 7.6.1): a proxy never passes them on.
var connectionFields = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Upgrade"}

// uncountedHeader says why requests cannot be told apart by the header
// name, or returns "": net/http holds Host and Transfer-Encoding apart
// from a request's header fields, so every request would lack them, and
// the connection's own fields never reach the upstream.
func uncountedHeader(name string) string {
	switch name = textproto.CanonicalMIMEHeaderKey(name); {
	case name == "Host" || name == "Transfer-Encoding":
		return name + " is never among a request's header fields as sluice reads them (net/http holds it apart): every request would lack it (name a header the caller sends, such as X-Tenant)"
	case slices.Contains(connectionFields, name):
		return name + " describes the connection, not the request, and never reaches the upstream (name a header the caller sends, such as X-Tenant)"
	}
	return ""
}
