package fastproxy

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/internal/httpname"
)

// Refuse reports whether the request h heads must be refused although
// fasthttp read it, and with what status and problem detail. fasthttp
// itself refuses (400) a signed, listed or repeated Content-Length, a
// Transfer-Encoding other than chunked or repeated, Transfer-Encoding on
// HTTP/1.0, a space before a field's colon, a second Host, bare CR and NUL
// in fields, and headers over MaxHeaderBytes (431). It is more lenient than
// net/http, and than a careful upstream, in places that Refuse closes:
//
//   - any protocol but HTTP/1.0 and HTTP/1.1 (fasthttp serves "HTTP/1.2"
//     and "HTTP/2.0" request lines as HTTP/1.1): 505;
//   - a fragment in the request target (fasthttp drops it; RFC 9112
//     3.2's request-target has none): 400;
//   - Content-Length beside Transfer-Encoding: chunked (RFC 9112 6.1 lets
//     a server refuse it; fasthttp drops Content-Length and reads chunks,
//     and a proxy behind that reads Content-Length would see another
//     request in the body): 400;
//   - Transfer-Encoding: identity, which fasthttp ignores, reading what
//     follows as the next request, where net/http refuses it and a reader
//     of RFC 2616 reads the body to the connection's end: 400;
//   - a space or tab inside a field name ("X-API Key"), which fasthttp
//     keeps and net/http refuses: 400;
//   - Connection fields naming more than MaxConnectionNames fields: 400;
//   - an absolute-form request target ("GET http://a.example/ HTTP/1.1")
//     whose authority names another host than Host, or holds a user
//     ("http://u@a.example/"): an origin server reads the authority and
//     ignores Host (RFC 9112 section 3.2.2), an upstream behind a proxy
//     may read Host; rules match the one host both name (httpname.CleanHost
//     of either: case, port and one trailing dot aside): 400;
//   - a header block whose end is a bare LF (its empty line, or the
//     line before it), which fasthttp reads only when a CRLF CRLF came
//     after it (alone, it is refused before Refuse: HeaderEnd): 400,
//     whatever followed.
func Refuse(h *fasthttp.RequestHeader) (status int, detail string) {
	if p := h.Protocol(); !bytes.Equal(p, http11) && !bytes.Equal(p, http10) {
		return fasthttp.StatusHTTPVersionNotSupported, "only HTTP/1.0 and HTTP/1.1 are served here"
	}
	if bytes.IndexByte(h.RequestURI(), '#') >= 0 {
		return fasthttp.StatusBadRequest, "the request target has a fragment (#), which is never sent"
	}
	// fasthttp reads a chunked body as ContentLength -1; only then can a
	// Content-Length field have been dropped beside it.
	if h.ContentLength() == -1 && hasField(h.RawHeaders(), contentLength) {
		return fasthttp.StatusBadRequest, "the request has both Content-Length and Transfer-Encoding"
	}
	// fasthttp drops "Transfer-Encoding: identity" (an RFC 2616 coding
	// RFC 9112 removed) and reads the body by Content-Length, or as none:
	// what follows would be read as the next request, where a reader that
	// knows identity reads a body to the connection's end.
	spaced, te := scanNames(h.RawHeaders())
	if h.ContentLength() != -1 && te {
		return fasthttp.StatusBadRequest, "the request's Transfer-Encoding is not chunked (only chunked is read)"
	}
	// fasthttp keeps a field whose name has a space in it ("X-API Key"),
	// and sends it on: an upstream that turns a name's spaces and dashes
	// into underscores (CGI, PHP) would read the access key sluice did not.
	if spaced {
		return fasthttp.StatusBadRequest, "a header field's name has a space in it (a name is one token, as X-API-Key)"
	}
	if detail := authorityProblem(h); detail != "" {
		return fasthttp.StatusBadRequest, detail
	}
	if tooManyConnectionNames(h) {
		return fasthttp.StatusBadRequest, connectionNamesDetail
	}
	// The fields as received, with the block's end (none: no fields, the
	// end unseen). The request line's end may be a bare LF.
	if raw := h.RawHeaders(); len(raw) > 0 && !bytes.HasSuffix(raw, crlfCRLF) {
		return fasthttp.StatusBadRequest, bareLFDetail
	}
	return 0, ""
}

// authorityProblem says why an absolute-form request target's authority
// is refused beside h's Host, "" when it is not (or the target is not in
// absolute form).
func authorityProblem(h *fasthttp.RequestHeader) string {
	target := b2s(h.RequestURI())
	if target == "" || target[0] == '/' || target == "*" {
		return ""
	}
	_, rest, ok := strings.Cut(target, "://")
	if !ok {
		return "" // authority-form (CONNECT), which fasthttp serves as a path
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if strings.IndexByte(authority, '@') >= 0 {
		return "the request target names a user (user@host): send no credentials in the target"
	}
	host := b2s(h.Host())
	if host == "" {
		return ""
	}
	a, whyA := httpname.CleanHost(authority)
	b, whyB := httpname.CleanHost(host)
	if whyA != "" || whyB != "" {
		a, b = strings.ToLower(authority), strings.ToLower(host)
	}
	if a != b {
		return "the request target's host " + strconv.Quote(clipHost(authority)) + " and Host " +
			strconv.Quote(clipHost(host)) + " differ (send the same host in both, or a path as the target)"
	}
	return ""
}

// clipHost shortens a host named in a problem detail.
func clipHost(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// bareLFDetail is the problem detail of a request whose header block
// ends in a bare LF (Refuse, and the server for ErrBareLFEnd).
const bareLFDetail = "the request's header block ends in a bare LF (end it, and each line, with CRLF)"

// tooManyConnectionNames reports whether h's Connection fields name more
// than MaxConnectionNames fields; it reads no further than the one past.
func tooManyConnectionNames(h *fasthttp.RequestHeader) bool {
	var named [MaxConnectionNames + 1][]byte
	return len(appendConnectionNames(named[:0], h, len(named))) > MaxConnectionNames
}

var connectionNamesDetail = "the request's Connection fields name more than " + strconv.Itoa(MaxConnectionNames) +
	" fields (a client names a few: close, keep-alive, upgrade)"

// scanNames reports whether a field name in raw, a request's header block
// as received, has a space or tab in it, and whether one is
// Transfer-Encoding. A line that starts with a space continues the one
// before (obs-fold): it names no field.
func scanNames(raw []byte) (spaced, te bool) {
	for len(raw) > 0 {
		line, rest, _ := bytes.Cut(raw, []byte{'\n'})
		raw = rest
		if len(line) == 0 || line[0] == ' ' || line[0] == '\t' {
			continue
		}
		k, _, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		spaced = spaced || bytes.IndexByte(k, ' ') >= 0 || bytes.IndexByte(k, '\t') >= 0
		te = te || asciiEqualFold(k, transferEncoding)
	}
	return spaced, te
}

var (
	http11           = []byte("HTTP/1.1")
	http10           = []byte("HTTP/1.0")
	crlfCRLF         = []byte("\r\n\r\n")
	contentLength    = []byte("content-length")
	transferEncoding = []byte("transfer-encoding")
)

// hasField reports whether raw, a request's header block as received,
// has a field named name (lower case), in any case.
func hasField(raw, name []byte) bool {
	for len(raw) > 0 {
		line, rest, _ := bytes.Cut(raw, []byte{'\n'})
		raw = rest
		if k, _, ok := bytes.Cut(line, []byte{':'}); ok && asciiEqualFold(k, name) {
			return true
		}
	}
	return false
}

func asciiEqualFold(a, lower []byte) bool {
	if len(a) != len(lower) {
		return false
	}
	for i, c := range a {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
