// Package check answers /check: nginx's auth_request and Traefik's
// forwardAuth ask it whether a request they received may pass, and it
// decides under the same policy, store and counters as sluice's gateway:
// it is one more transport over package decision, as httplimit is, and
// shares httplimit's net/http side (internal/nethttp: the header adapter,
// the Verdict's fields, the problem+json answer).
//
// The request asked about is rebuilt from the headers the proxy adds to
// its question: its method from X-Original-Method (nginx) or
// X-Forwarded-Method (Traefik), its path from X-Original-URI or
// X-Forwarded-Uri (the query is not matched by rules), its host from
// X-Original-Host (nginx) or X-Forwarded-Host (Traefik). The caller is recognised from the same headers as at
// the gateway (the key header; the address through trusted proxies'
// X-Forwarded-For or Forwarded). /check answers 200 with the RateLimit
// headers and X-Sluice-Client, or what a caller of the gateway would get
// (429 problem+json with Retry-After; 401 for an unknown key), where 429
// becomes Options.DenyStatus. A question without the original request's
// headers, or with two different ones, is answered 400 problem+json:
// nothing is counted.
//
// /check never learns how the request it allowed ended: the cost it
// reserved stands, and rules that need the end or the response
// (concurrency, count, cost_header) are refused by package config when
// decide.http is set.
package check

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/nethttp"
	"github.com/sluice-rl/sluice/policy"
)

// The headers /check reads the original request from, canonical.
const (
	OriginalMethod  = "X-Original-Method"  // nginx (set by the documented recipe)
	OriginalURI     = "X-Original-Uri"     // nginx: X-Original-URI $request_uri
	ForwardedMethod = "X-Forwarded-Method" // Traefik forwardAuth
	ForwardedURI    = "X-Forwarded-Uri"    // Traefik forwardAuth
	OriginalHost    = "X-Original-Host"    // nginx: X-Original-Host $host (the recipe sets it)
	ForwardedHost   = "X-Forwarded-Host"   // Traefik forwardAuth
)

// ProblemHeader carries, with DenyStatus 403, the problem+json body of an
// answer other than 200: nginx does not pass the body of an auth_request
// answer on, so its recipe answers the caller with this header's value.
const ProblemHeader = "X-Sluice-Problem"

// Path is where the handler answers; other paths get 404.
const Path = "/check"

// Options configure a Handler.
type Options struct {
	// Decide decides a request under the policy in force, as the gateway
	// decides its callers' (gateway.Decider's Decide, or an Engine's
	// Decide under fixed Settings). Required. The Handler finishes each
	// Verdict as soon as it has answered: a concurrency rule's lease is
	// given back at once, and count and cost_header rules settle nothing,
	// so a policy for /check has none of them (package config refuses
	// them with decide.http).
	Decide func(context.Context, decision.Request) *decision.Verdict
	// DenyStatus replaces 429 in the answer to a request over a limit:
	// 429 (the default) or 403 (nginx auth_request, which passes on only
	// 401 and 403; its recipe maps 403 back to 429).
	DenyStatus int
}

// Handler answers /check.
type Handler struct {
	deny   int
	decide func(context.Context, decision.Request) *decision.Verdict
}

// New returns a Handler.
func New(opts Options) (*Handler, error) {
	if opts.Decide == nil {
		return nil, fmt.Errorf("check: no Decide")
	}
	switch opts.DenyStatus {
	case 0:
		opts.DenyStatus = http.StatusTooManyRequests
	case http.StatusTooManyRequests, http.StatusForbidden:
	default:
		return nil, fmt.Errorf("check: DenyStatus %d (want 429 or 403)", opts.DenyStatus)
	}
	return &Handler{deny: opts.DenyStatus, decide: opts.Decide}, nil
}

// ServeHTTP answers a question about the request the proxy describes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path {
		h.problem(w, http.StatusNotFound, "sluice's decision service answers "+Path+" only")
		return
	}
	method, path, detail := original(r.Header)
	if detail != "" {
		h.problem(w, http.StatusBadRequest, detail)
		return
	}
	host, detail := pickHost(r.Header)
	if detail != "" {
		h.problem(w, http.StatusBadRequest, detail)
		return
	}
	peer, _ := netip.ParseAddrPort(r.RemoteAddr) // the zero AddrPort if not an address: no caller address
	v := h.decide(r.Context(), decision.Request{Method: method, Path: path, Host: host, Peer: peer, Header: nethttp.Header(r.Header), Origin: r})
	if v.Pass {
		h.allowed(w, v)
		// The request goes on without sluice: its end is never known,
		// so what it reserved stands (nothing is settled).
		v.Finish(&decision.Response{Passed: true, Unanswered: true})
		return
	}
	h.refused(w, v)
	v.Finish(nil)
}

// allowed answers 200 with the RateLimit headers and the caller's id.
func (h *Handler) allowed(w http.ResponseWriter, v *decision.Verdict) {
	out := w.Header()
	nethttp.SetFields(out, v.Header)
	if v.Client != "" {
		out[policy.ClientHeader] = []string{v.Client}
	}
	out["Cache-Control"] = []string{"no-store"}
	w.WriteHeader(http.StatusOK)
}

// refused sends the Verdict's answer, with DenyStatus for 429; with
// DenyStatus 403 its body also goes in ProblemHeader. A caller gone while
// its request was held gets nothing.
func (h *Handler) refused(w http.ResponseWriter, v *decision.Verdict) {
	status := v.Status
	if status == decision.StatusClientGone {
		return
	}
	if status == http.StatusTooManyRequests {
		status = h.deny
	}
	out := w.Header()
	nethttp.SetFields(out, v.Header)
	if h.deny == http.StatusForbidden && len(v.Body) > 0 {
		out[ProblemHeader] = []string{headerSafe(v.Body)}
	}
	w.WriteHeader(status)
	_, _ = w.Write(v.Body)
}

// problem answers a question /check cannot take with a problem+json body
// (also in ProblemHeader with DenyStatus 403).
func (h *Handler) problem(w http.ResponseWriter, status int, detail string) {
	body := nethttp.Problem(status, detail)
	if h.deny == http.StatusForbidden {
		w.Header().Set(ProblemHeader, headerSafe(body))
	}
	nethttp.WriteProblem(w, status, body)
}

// original reads the method and escaped path of the request the proxy
// asks about from its headers, or says why it cannot.
func original(h http.Header) (method, path, detail string) {
	method, detail = pick(h, OriginalMethod, ForwardedMethod)
	if detail != "" {
		return "", "", detail
	}
	uri, detail := pick(h, OriginalURI, ForwardedURI)
	if detail != "" {
		return "", "", detail
	}
	switch {
	case method == "" && uri == "":
		return "", "", "no original request: send its method and URI in X-Original-Method and X-Original-URI (nginx) or X-Forwarded-Method and X-Forwarded-Uri (Traefik)"
	case method == "":
		return "", "", "no original method: send it in X-Original-Method (nginx: proxy_set_header X-Original-Method $request_method) or X-Forwarded-Method (Traefik)"
	case uri == "":
		return "", "", "no original URI: send it in X-Original-URI (nginx: proxy_set_header X-Original-URI $request_uri) or X-Forwarded-Uri (Traefik)"
	case !validMethod(method):
		return "", "", fmt.Sprintf("the original method %s is not an HTTP method token", strconv.Quote(clip(method)))
	case uri[0] != '/' || strings.IndexFunc(uri, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return "", "", fmt.Sprintf("the original URI %s is not a path with an optional query (such as /claims/7?full=1)", strconv.Quote(clip(uri)))
	}
	path, _, _ = strings.Cut(uri, "?")
	return method, path, ""
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

// pickHost is pick for the host headers, which agree when they name the
// same host in any spelling the rules read as one (case, port, a trailing
// dot: policy.CleanHost); nginx's $host is lower-case, Traefik's
// X-Forwarded-Host as the caller wrote it.
func pickHost(h http.Header) (string, string) {
	va, vb := h[OriginalHost], h[ForwardedHost]
	if len(va) == 1 && len(vb) == 1 && va[0] != vb[0] {
		ca, errA := policy.CleanHost(va[0])
		cb, errB := policy.CleanHost(vb[0])
		if errA == nil && errB == nil && ca == cb {
			return va[0], ""
		}
	}
	return pick(h, OriginalHost, ForwardedHost)
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
				r1, r2 := utf16.EncodeRune(r)
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

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
