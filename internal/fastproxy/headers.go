package fastproxy

import (
	"bytes"
	"net/netip"
	"slices"
	"strings"
	"unsafe"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/internal/httpname"
)

// Forwarding says how one caller's request goes on to the upstream.
type Forwarding struct {
	// Peer is the caller's address: the connection's far end.
	Peer netip.Addr
	// Trusted reports whether Peer is a trusted proxy: its forwarding
	// header (Header) is believed and goes on, Peer added.
	Trusted bool
	// Forwarded reports whether the forwarding header sluice reads
	// callers from is Forwarded (RFC 7239); false: X-Forwarded-For. From
	// a trusted peer that header goes on as the peer wrote it, Peer
	// added; from another it never goes on. X-Forwarded-For always names
	// Peer last (after a trusted peer's list); Forwarded goes on only when
	// it is the one read. X-Forwarded-Host and -Proto are sluice's own.
	Forwarded bool
	// Method is the method that goes on (the one rules matched, in its
	// canonical spelling); empty: the caller's.
	Method []byte
	// URI is the request target that goes on: path and query; empty: the
	// caller's.
	URI []byte
	// Removed are caller's fields that must not go on, named exactly as
	// the request's header spells them (those the decision removed:
	// sluice's own header, a respelled access key, method override
	// headers).
	Removed []string
	// Strip are fields that must not go on in any spelling an upstream
	// reads as the same (httpname.SameHeader: the loop mark, in the
	// gateway), beside Removed and the hop-by-hop and forwarding fields
	// that never go on. Names, not a function: the proxy reads them
	// itself for every field, without calling back.
	Strip []string
	// Kept are fields a caller may not remove by naming them in
	// Connection (the access key, counted headers), in canonical spelling.
	Kept []string
	// Set are fields sluice adds after the caller's (X-Sluice-Client,
	// Sluice-Loop-Mark).
	Set []Field
}

// Field is one header field.
type Field struct{ Name, Value string }

// connectionField reports whether name (in any case) is a field that
// never goes on from the caller, nor back from the upstream: a hop-by-hop
// one (httpname.HopByHop), Content-Length (the body sets it) or Expect
// (sluice has read or streams the body already).
func connectionField(name string) bool {
	return httpname.HopByHop(name) || oneOf(name, bodyFields)
}

// bodyFields are the fields of one message's body that the proxy writes
// afresh (connectionField).
var bodyFields = []string{"Content-Length", "Expect"}

// forwarding are the fields Build writes itself; a caller's never go on,
// in any spelling.
var forwarding = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Host"}

// Build writes into out the request that goes on for the caller's request
// in: its method, target, Host and fields, without the hop-by-hop ones,
// those the caller named in Connection (but Kept), Removed, Strip and
// the forwarding headers; then the forwarding headers as Forwarding says,
// then Set. tls is whether the caller came over TLS (X-Forwarded-Proto).
func (f *Forwarding) Build(in, out *fasthttp.RequestHeader, tls bool) {
	out.SetMethodBytes(orBytes(f.Method, in.Method()))
	out.SetRequestURIBytes(orBytes(f.URI, in.RequestURI()))
	out.SetHostBytes(in.Host())
	out.SetNoDefaultContentType(true)    // a body without Content-Type goes on without one
	var named [MaxConnectionNames][]byte // Refuse lets no more through: the list stays on the stack
	conn := newConnNames(appendConnectionNames(named[:0], in, -1))
	for k, v := range in.All() {
		name := b2s(k)
		if connectionField(name) || respells(name, forwarding) || slices.Contains(f.Removed, name) ||
			respells(name, f.Strip) || (conn.has(k) && !oneOf(name, f.Kept)) {
			continue
		}
		out.AddBytesKV(k, v)
	}
	f.forwardingHeaders(in, out, tls)
	for _, fl := range f.Set {
		out.Add(fl.Name, fl.Value)
	}
}

// forwardingHeaders writes X-Forwarded-For (or Forwarded),
// X-Forwarded-Host and X-Forwarded-Proto, as net/http's ReverseProxy
// with SetXForwarded and the gateway's Rewrite did.
func (f *Forwarding) forwardingHeaders(in, out *fasthttp.RequestHeader, tls bool) {
	var buf [256]byte
	b := buf[:0]
	peer := f.Peer.Unmap().WithZone("")
	if f.Forwarded {
		if f.Trusted {
			for k, v := range in.All() {
				if b2s(k) == "Forwarded" {
					out.AddBytesKV(k, v)
				}
			}
		}
		if peer.IsValid() {
			out.AddBytesV("Forwarded", appendForwardedFor(b, peer))
		}
	} else if f.Trusted {
		for k, v := range in.All() {
			if b2s(k) == "X-Forwarded-For" {
				b = append(append(b, v...), ", "...)
			}
		}
	}
	if peer.IsValid() {
		out.AddBytesV("X-Forwarded-For", peer.AppendTo(b))
	}
	out.AddBytesV("X-Forwarded-Host", in.Host())
	if tls {
		out.Add("X-Forwarded-Proto", "https")
	} else {
		out.Add("X-Forwarded-Proto", "http")
	}
}

// appendForwardedFor appends the RFC 7239 element naming addr:
// for=192.0.2.1, or for="[2001:db8::1]" (an IPv6 address is quoted).
func appendForwardedFor(b []byte, addr netip.Addr) []byte {
	if addr.Is6() {
		return append(addr.AppendTo(append(b, `for="[`...)), `]"`...)
	}
	return addr.AppendTo(append(b, "for="...))
}

// CopyResponse copies the upstream's status and fields in to the caller's
// answer out, without hop-by-hop fields, those the upstream named in
// Connection, those strip names (in any spelling an upstream reads as
// the same: httpname.SameHeader) and those whose name has a space in it, which fasthttp reads and net/http refuses: a reader in
// front of sluice may read "X A: 1" as another field, or the line as
// broken. An answer without Content-Type goes on without one.
func CopyResponse(in *fasthttp.ResponseHeader, out *fasthttp.ResponseHeader, strip []string) {
	out.SetStatusCode(in.StatusCode())
	in.SetNoDefaultContentType(true) // else All lists fasthttp's text/plain for an answer without one
	conn := responseConnNames(in)
	for k, v := range in.All() {
		name := b2s(k)
		if connectionField(name) || conn.has(k) || respells(name, strip) || bytes.IndexByte(k, ' ') >= 0 {
			continue
		}
		out.AddBytesKV(k, v)
	}
}

// responseConnNames are the field names the upstream's Connection fields
// list (CopyResponse, switchingHead).
func responseConnNames(h *fasthttp.ResponseHeader) connNames {
	var toks [][]byte
	for _, v := range h.PeekAll("Connection") {
		for item, rest := nextItem(v); item != nil; item, rest = nextItem(rest) {
			toks = append(toks, item)
		}
	}
	return newConnNames(toks)
}

// MaxConnectionNames is the most names a request's Connection fields may
// list (Refuse): a client names a few (close, keep-alive, upgrade, te and
// the fields of an upgrade), and a caller naming thousands would make
// every step that reads them cost as much.
const MaxConnectionNames = 32

// appendConnectionNames appends to toks the field names the caller's
// Connection fields list, as written (not copied), but no more than max
// of them (-1: all).
func appendConnectionNames(toks [][]byte, h *fasthttp.RequestHeader, max int) [][]byte {
	n := 0
	for k, v := range h.All() {
		if b2s(k) != "Connection" {
			continue
		}
		for item, rest := nextItem(v); item != nil; item, rest = nextItem(rest) {
			if n == max {
				return toks
			}
			toks, n = append(toks, item), n+1
		}
	}
	return toks
}

// nextItem returns the first item of the comma-separated list v (RFC
// 9110 5.6.1), trimmed, empty ones skipped, and the rest of v after it;
// nil when there is none.
func nextItem(v []byte) (item, rest []byte) {
	for len(v) > 0 {
		item, v, _ = bytes.Cut(v, []byte{','})
		if item = bytes.TrimSpace(item); len(item) > 0 {
			return item, v
		}
	}
	return nil, nil
}

// listHas reports whether the comma-separated list v has the item tok,
// in any case.
func listHas(v, tok []byte) bool {
	for item, rest := nextItem(v); item != nil; item, rest = nextItem(rest) {
		if bytes.EqualFold(item, tok) {
			return true
		}
	}
	return false
}

// connNames are the field names that Connection fields list (RFC 9110
// 7.6.1), which do not go on. The usual few (close, keep-alive, upgrade)
// are scanned; past maxScannedTokens they are looked up in a set of their
// ASCII lower-case spellings (field names are ASCII tokens), so that a
// header block of thousands of tokens and thousands of fields costs time
// linear in its size, where comparing each field with each token cost a
// caller's request some 18 ms (BenchmarkBuildManyTokens).
type connNames struct {
	few [][]byte
	set map[string]struct{}
}

const maxScannedTokens = 8

func newConnNames(toks [][]byte) connNames {
	if len(toks) <= maxScannedTokens {
		return connNames{few: toks}
	}
	var all []byte
	for _, t := range toks {
		all = lowerASCII(all, t)
	}
	lower := string(all) // one copy, which the keys share
	set := make(map[string]struct{}, len(toks))
	for _, t := range toks {
		set[lower[:len(t)]], lower = struct{}{}, lower[len(t):]
	}
	return connNames{set: set}
}

// has reports whether name is one of the listed names, in any case.
func (c *connNames) has(name []byte) bool {
	if c.set == nil {
		return tokenIn(c.few, name)
	}
	var buf [64]byte
	_, ok := c.set[string(lowerASCII(buf[:0], name))] // looked up without a copy
	return ok
}

// lowerASCII appends b to dst with ASCII letters in lower case.
func lowerASCII(dst, b []byte) []byte {
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

func tokenIn(toks [][]byte, name []byte) bool {
	for _, t := range toks {
		if bytes.EqualFold(t, name) {
			return true
		}
	}
	return false
}

// respells reports whether name is one of names to some upstream: in any
// case, '_' and '-' alike (httpname.SameHeader). A caller's
// X_Forwarded_For reaches a CGI-style upstream as HTTP_X_FORWARDED_FOR,
// as sluice's own X-Forwarded-For does.
func respells(name string, names []string) bool {
	for _, n := range names {
		if httpname.SameHeader(n, name) {
			return true
		}
	}
	return false
}

// oneOf reports whether name is one of names, in any case.
func oneOf(name string, names []string) bool {
	for _, n := range names {
		if len(n) == len(name) && strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

func orBytes(a, b []byte) []byte {
	if len(a) > 0 {
		return a
	}
	return b
}

// b2s views b as a string without copying; the string must not outlive
// b's next change (every use here ends before the header changes).
func b2s(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
