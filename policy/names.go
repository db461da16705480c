package policy

import (
	"net/textproto"

	"github.com/sluice-rl/sluice/internal/httpname"
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

// HopByHop reports whether name (in any case) is a hop-by-hop header, which
// a proxy removes: a caller's never reaches the upstream, and the
// upstream's would never reach sluice (RFC 9110 section 7.6.1, with the
// Proxy-Connection and Keep-Alive of older proxies, as net/http's
// ReverseProxy removes them). It allocates nothing, so the gateway calls
// it for every field it passes on. The one list every part of sluice
// reads, the gateway's transport too (internal/httpname).
func HopByHop(name string) bool { return httpname.HopByHop(name) }

// uncountedHeader says why requests cannot be told apart by the header
// name, or returns "": net/http holds Host and Transfer-Encoding apart
// from a request's header fields, so every request would lack them; the
// connection's own fields never reach the upstream; RemovedHeader's are
// removed before anything reads them.
func uncountedHeader(name string) string {
	switch name = textproto.CanonicalMIMEHeaderKey(name); {
	case name == "Host" || name == "Transfer-Encoding":
		return name + " is never among a request's header fields as sluice reads them (net/http holds it apart): every request would lack it (name a header the caller sends, such as X-Tenant)"
	case HopByHop(name):
		return name + " describes the connection, not the request, and never reaches the upstream (name a header the caller sends, such as X-Tenant)"
	case RemovedHeader(name):
		return name + " is removed from every request before anything reads it: sluice writes " + ClientHeader + " itself, and an override header would make the upstream serve another method or path than the one counted (name a header the caller sends, such as X-Tenant)"
	}
	return ""
}

// ClientHeader is the field that tells the upstream who the caller is
// (httplimit.ClientHeader). Only sluice writes it: a caller's copy is
// removed in every spelling before anything reads the request.
const ClientHeader = "X-Sluice-Client"

// overrideHeaders are the fields with which some upstreams serve a
// request as another one than its request line says: another method
// (Symfony, Express's method-override, ASP.NET Web API, Google's APIs) or
// another path (X-Original-URL and X-Rewrite-URL: IIS URL Rewrite, Symfony
// and Zend behind it). sluice counts the request line, so these are
// removed before anything reads the request.
var overrideHeaders = [...]string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override",
	"X-Original-Url", "X-Rewrite-Url"}

// RemovedHeader reports whether a caller's field of this name is removed
// before anything reads the request, in any spelling SameHeaderName
// accepts: ClientHeader and the override headers.
func RemovedHeader(name string) bool {
	if SameHeaderName(name, ClientHeader) {
		return true
	}
	for _, o := range overrideHeaders {
		if SameHeaderName(name, o) {
			return true
		}
	}
	return false
}

// SameHeaderName reports whether two header names are the same to some
// upstream: equal regardless of case, with '_' and '-' alike, as
// CGI-style upstreams (PHP, WSGI, Rack) read X-API-Key and X_API_KEY both
// as HTTP_X_API_KEY (internal/httpname, which the gateway's transport
// reads too).
func SameHeaderName(a, b string) bool { return httpname.SameHeader(a, b) }
