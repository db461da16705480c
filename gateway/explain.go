package gateway

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"slices"
	"strings"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/policy"
)

// ExplainJSON is the answer of GET /api/v1/explain and of `sluice check
// --explain`: how a described request is identified and counted, and
// what it would get now. It never holds the access key.
type ExplainJSON struct {
	Request struct {
		Method  string `json:"method"`
		Path    string `json:"path"`
		Host    string `json:"host,omitempty"`
		Client  string `json:"client"`
		Plan    string `json:"plan,omitempty"`
		Address string `json:"address,omitempty"`
	} `json:"request"`
	Rules []counterJSON `json:"rules"` // the matching rules, in the file's order
	Would struct {
		Status int     `json:"status"` // 200 (passed on), 400, 401, 403, 429, 503
		Detail string  `json:"detail,omitempty"`
		RetryS float64 `json:"retry_s,omitempty"`
	} `json:"would"`
	Store *StoreInfo `json:"store,omitempty"`
}

// Explanation turns ex into its JSON; where says whose counters the
// rules read (StoreInfo.counterKind).
func Explanation(ex decision.Explanation, where string) ExplainJSON {
	var out ExplainJSON
	out.Request.Method, out.Request.Path, out.Request.Client, out.Request.Plan = ex.Method, ex.Path, ex.Client, ex.Plan
	out.Request.Host = ex.Host
	if ex.Addr.IsValid() {
		out.Request.Address = ex.Addr.String()
	}
	out.Rules = []counterJSON{}
	for _, r := range ex.Rules {
		out.Rules = append(out.Rules, counterOf(r, "", where))
	}
	out.Would.Status, out.Would.Detail = cmpStatus(ex.Status), ex.Detail
	if ex.Status == http.StatusTooManyRequests {
		out.Would.RetryS = seconds(ex.RetryAfter)
	}
	return out
}

func cmpStatus(s int) int {
	if s == 0 {
		return http.StatusOK
	}
	return s
}

// explain answers GET /api/v1/explain?method=M&path=P&host=H&key=K&ip=A&header=NAME:VALUE.
func (g *Gateway) explain(w http.ResponseWriter, r *http.Request) {
	snap := g.snap.Load()
	req, err := ExplainRequest(r.URL.RawQuery, snap.cfg.Compiled)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, err.Error())
		return
	}
	info := g.storeInfo()
	out := Explanation(g.engine.Explain(r.Context(), snap.front.Settings, req), info.counterKind())
	out.Store = &info
	writeJSON(w, http.StatusOK, out)
}

// ExplainRequest reads the request an explain query describes: method
// (default GET), path (required, from '/'), host (its Host), key (the access key, sent in
// the policy's key header), ip (the peer's address) and header=NAME:VALUE,
// repeatable. What cannot be read is an error saying why.
func ExplainRequest(raw string, pol *policy.Compiled) (decision.Request, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return decision.Request{}, fmt.Errorf("the query cannot be parsed: %v", err)
	}
	accepted := []string{"method", "path", "host", "key", "ip", "header"}
	for k, vs := range q {
		if !slices.Contains(accepted, k) {
			return decision.Request{}, fmt.Errorf("unknown parameter %q (accepted: %s)", k, strings.Join(accepted, ", "))
		}
		if len(vs) > 1 && k != "header" {
			return decision.Request{}, fmt.Errorf("%s given %d times (give it once; only header repeats)", k, len(vs))
		}
	}
	method, path := q.Get("method"), q.Get("path")
	if method == "" {
		method = http.MethodGet
	}
	if !validToken(method) {
		return decision.Request{}, fmt.Errorf("method %q is not an HTTP method (GET, POST, ...)", method)
	}
	if !strings.HasPrefix(path, "/") {
		return decision.Request{}, fmt.Errorf("path=%q: give the request's path from its '/', such as /claims/7", path)
	}
	h := explainHeaders{}
	for _, hv := range q["header"] {
		name, value, ok := strings.Cut(hv, ":")
		if !ok || !validToken(name) {
			return decision.Request{}, fmt.Errorf("header=%q: give NAME:VALUE, such as X-Tenant:acme", hv)
		}
		h.add(name, strings.TrimSpace(value))
	}
	if k := q.Get("key"); k != "" {
		h.add(pol.KeyHeader(), k)
	}
	req := decision.Request{Method: method, Path: path, Host: q.Get("host"), Header: h}
	if ip := q.Get("ip"); ip != "" {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return decision.Request{}, fmt.Errorf("ip=%q is not an address (such as 192.0.2.7 or 2001:db8::1)", ip)
		}
		req.Peer = netip.AddrPortFrom(a, 0)
	}
	return req, nil
}

// validToken reports whether s is an HTTP token (a method, a field name).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// explainHeaders are a described request's fields, by canonical name.
type explainHeaders map[string][]string

func (h explainHeaders) add(name, value string) {
	k := textproto.CanonicalMIMEHeaderKey(name)
	h[k] = append(h[k], value)
}

func (h explainHeaders) Values(dst []string, name string) []string { return append(dst, h[name]...) }

func (h explainHeaders) Names(dst []string) []string {
	for k := range h {
		dst = append(dst, k)
	}
	return dst
}
