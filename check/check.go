// Package check answers /check: nginx's auth_request and Traefik's
// forwardAuth ask it whether a request they received may pass, and it
// decides under the same policy, store and counters as sluice's gateway.
//
// The request asked about is rebuilt from the headers the proxy adds to
// its question: its method from X-Original-Method (nginx) or
// X-Forwarded-Method (Traefik), its path and query from X-Original-URI or
// X-Forwarded-Uri. The caller is recognised from the same headers as at
// the gateway (the key header; the address through trusted proxies'
// X-Forwarded-For or Forwarded). /check answers 200 with the RateLimit
// headers and X-Sluice-Client, or what a caller of the gateway would get
// (429 problem+json with Retry-After; 401 for an unknown key), where 429
// becomes Options.DenyStatus. A question without the original request's
// headers, or with two different ones, is answered 400 problem+json:
// nothing is counted.
package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sluice-rl/sluice/httplimit"
)

// The headers /check reads the original request from, canonical.
const (
	OriginalMethod  = "X-Original-Method"  // nginx (set by the documented recipe)
	OriginalURI     = "X-Original-Uri"     // nginx: X-Original-URI $request_uri
	ForwardedMethod = "X-Forwarded-Method" // Traefik forwardAuth
	ForwardedURI    = "X-Forwarded-Uri"    // Traefik forwardAuth
)

// ProblemHeader carries, with DenyStatus 403, the problem+json body of an
// answer other than 200: nginx does not pass the body of an auth_request
// answer on, so its recipe answers the caller with this header's value.
const ProblemHeader = "X-Sluice-Problem"

// Path is where the handler answers; other paths get 404.
const Path = "/check"

// Options configure a Handler.
type Options struct {
	// Limit puts the limiter in front of a handler, deciding each request
	// as the gateway decides its callers' (gateway.Gateway.Limit, or an
	// httplimit.Limiter's Handler). Required.
	Limit func(http.Handler) http.Handler
	// DenyStatus replaces 429 in the answer to a request over a limit:
	// 429 (the default) or 403 (nginx auth_request, which passes on only
	// 401 and 403; its recipe maps 403 back to 429).
	DenyStatus int
}

// Handler answers /check.
type Handler struct {
	deny    int
	limited http.Handler // Limit in front of allowed
}

// New returns a Handler.
func New(opts Options) (*Handler, error) {
	if opts.Limit == nil {
		return nil, fmt.Errorf("check: no Limit")
	}
	switch opts.DenyStatus {
	case 0:
		opts.DenyStatus = http.StatusTooManyRequests
	case http.StatusTooManyRequests, http.StatusForbidden:
	default:
		return nil, fmt.Errorf("check: DenyStatus %d (want 429 or 403)", opts.DenyStatus)
	}
	return &Handler{deny: opts.DenyStatus, limited: opts.Limit(http.HandlerFunc(allowed))}, nil
}

// allowed answers a request the limiter let through: 200, with the
// RateLimit headers the limiter set and the caller's id.
func allowed(w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get(httplimit.ClientHeader); id != "" {
		w.Header().Set(httplimit.ClientHeader, id)
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

// ServeHTTP answers a question about the request the proxy describes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path {
		h.problem(w, http.StatusNotFound, "Not Found", "sluice's decision service answers "+Path+" only")
		return
	}
	orig, detail := original(r)
	if orig == nil {
		h.problem(w, http.StatusBadRequest, "Bad Request", detail)
		return
	}
	ans := &answer{header: w.Header()}
	h.limited.ServeHTTP(ans, orig)
	h.write(w, ans)
}

// write sends what the limiter answered, with DenyStatus for 429; with
// DenyStatus 403 an answer other than 200 also carries its body in
// ProblemHeader.
func (h *Handler) write(w http.ResponseWriter, a *answer) {
	status := a.status
	if status == 0 {
		status = http.StatusOK
	}
	if status == http.StatusTooManyRequests {
		status = h.deny
	}
	if h.deny == http.StatusForbidden && status != http.StatusOK && a.body.Len() > 0 {
		w.Header().Set(ProblemHeader, headerSafe(a.body.Bytes()))
	}
	w.Header().Del("Connection") // the limiter's close after an early answer: the question has no body
	w.WriteHeader(status)
	_, _ = w.Write(a.body.Bytes())
}

// problem answers a question /check cannot take with a problem+json body.
func (h *Handler) problem(w http.ResponseWriter, status int, title, detail string) {
	body, _ := json.Marshal(map[string]any{"type": "about:blank", "title": title, "status": status, "detail": detail})
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	if h.deny == http.StatusForbidden {
		w.Header().Set(ProblemHeader, headerSafe(body))
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// original rebuilds the request the proxy asks about from r, or says why
// it cannot. The copy keeps r's headers (the key, X-Forwarded-For) and its
// peer address, without the headers that described it.
func original(r *http.Request) (*http.Request, string) {
	method, detail := pick(r.Header, OriginalMethod, ForwardedMethod)
	if detail != "" {
		return nil, detail
	}
	uri, detail := pick(r.Header, OriginalURI, ForwardedURI)
	if detail != "" {
		return nil, detail
	}
	switch {
	case method == "" && uri == "":
		return nil, "no original request: send its method and URI in X-Original-Method and X-Original-URI (nginx) or X-Forwarded-Method and X-Forwarded-Uri (Traefik)"
	case method == "":
		return nil, "no original method: send it in X-Original-Method (nginx: proxy_set_header X-Original-Method $request_method) or X-Forwarded-Method (Traefik)"
	case uri == "":
		return nil, "no original URI: send it in X-Original-URI (nginx: proxy_set_header X-Original-URI $request_uri) or X-Forwarded-Uri (Traefik)"
	case !validMethod(method):
		return nil, fmt.Sprintf("the original method %s is not an HTTP method token", strconv.Quote(clip(method)))
	}
	u, err := url.ParseRequestURI(uri)
	if err != nil || !strings.HasPrefix(uri, "/") {
		return nil, fmt.Sprintf("the original URI %s is not a path with an optional query (such as /claims/7?full=1)", strconv.Quote(clip(uri)))
	}
	o := r.Clone(r.Context())
	o.Method, o.URL, o.RequestURI = method, u, uri
	for _, name := range []string{OriginalMethod, OriginalURI, ForwardedMethod, ForwardedURI} {
		delete(o.Header, name)
	}
	o.Body, o.ContentLength = http.NoBody, 0
	return o, ""
}

// pick returns the one value the request's headers a (nginx's) and b
// (Traefik's) give, or a problem: a header sent twice, or the two naming
// different values (a caller may have sent the one its proxy does not
// set, to be counted as another request).
func pick(h http.Header, a, b string) (string, string) {
	va, vb := h[a], h[b]
	for _, v := range []struct {
		name string
		vals []string
	}{{a, va}, {b, vb}} {
		if len(v.vals) > 1 {
			return "", fmt.Sprintf("%s is sent %d times (once, by the proxy that asks)", v.name, len(v.vals))
		}
	}
	switch {
	case len(va) == 1 && len(vb) == 1 && va[0] != vb[0]:
		return "", fmt.Sprintf("%s %s and %s %s disagree (send one; a caller may have sent the other)",
			a, strconv.Quote(clip(va[0])), b, strconv.Quote(clip(vb[0])))
	case len(va) == 1:
		return va[0], ""
	case len(vb) == 1:
		return vb[0], ""
	}
	return "", ""
}

// validMethod reports whether m is an HTTP token (RFC 9110 section 5.6.2).
func validMethod(m string) bool {
	if m == "" || len(m) > 32 {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// headerSafe returns a JSON body as one header value: its line ends and
// every byte outside visible ASCII escaped as JSON escapes them.
func headerSafe(body []byte) string {
	var b strings.Builder
	for _, r := range strings.TrimSpace(string(body)) {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ') // between JSON tokens: JSON strings hold none raw
		case r < ' ' || r > '~':
			if r > 0xffff {
				r1, r2 := surrogates(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func surrogates(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// answer records what the limiter answers, so that its status can be
// replaced and its body copied into a header before anything is sent.
type answer struct {
	header http.Header // the real writer's: the limiter's headers go straight there
	status int
	body   bytes.Buffer
}

func (a *answer) Header() http.Header { return a.header }

func (a *answer) WriteHeader(status int) {
	if a.status == 0 && status >= 200 {
		a.status = status
	}
}

func (a *answer) Write(p []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	if a.body.Len()+len(p) > maxBody {
		return 0, fmt.Errorf("check: answer over %d bytes", maxBody)
	}
	return a.body.Write(p)
}

// maxBody bounds an answer's body: the limiter's problem+json is far
// shorter.
const maxBody = 64 << 10
