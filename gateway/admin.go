package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/sluice-rl/sluice/config"
)

// AdminHandler returns the admin side: the dashboard at /, /metrics,
// /healthz, /readyz, POST /reload, and the operators' API: GET
// /api/v1/overview (the live view, overview.go), GET and DELETE
// /api/v1/keys (a counter now; reset it, keys.go), GET /api/v1/explain
// (explain.go), and the run-time changes (steering.go): GET
// /api/v1/overrides, PUT and DELETE /api/v1/overrides/{target}, GET and
// PUT /api/v1/degrade, GET /api/v1/audit. It must never be served on the callers' address.
//
// Browsers are kept out: a cross-origin POST, PUT or DELETE (Sec-Fetch-Site
// or Origin naming another site) is refused with 403, so that no web page
// open on the operator's machine can reload, reset a counter or change a
// limit. /metrics, /reload
// and /api/v1 also need either the
// admin token (Authorization: Bearer, when admin.token is set) or, without
// one, a Host that is an IP address, localhost or the admin address's own
// host: a page that rebinds its DNS name to 127.0.0.1 still sends its own
// name as Host; so does /api/v1/overview. /healthz and /readyz are open to
// load balancers and probes.
func (g *Gateway) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", g.adminOnly(g.metrics.handler()))
	mux.Handle("GET /{$}", dashboardHandler())
	mux.Handle("GET /dashboard/{file}", dashboardHandler())
	mux.Handle("GET /api/v1/overview", g.adminOnly(http.HandlerFunc(g.overview)))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeText(w, http.StatusOK, "ok\n")
	})
	mux.HandleFunc("GET /readyz", g.readyz)
	mux.Handle("POST /reload", g.adminOnly(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if err := g.Reload(); err != nil {
			writeText(w, http.StatusUnprocessableEntity, "reload refused; the previous configuration stays in force:\n"+err.Error()+"\n")
			return
		}
		writeText(w, http.StatusOK, "reloaded\n")
	})))
	mux.Handle("GET /api/v1/keys", g.adminOnly(http.HandlerFunc(g.keys)))
	mux.Handle("DELETE /api/v1/keys", g.adminOnly(http.HandlerFunc(g.keys)))
	mux.Handle("GET /api/v1/explain", g.adminOnly(http.HandlerFunc(g.explain)))
	mux.Handle("GET /api/v1/overrides", g.adminOnly(http.HandlerFunc(g.getOverrides)))
	mux.Handle("PUT /api/v1/overrides/{target...}", g.adminOnly(http.HandlerFunc(g.putOverride)))
	mux.Handle("DELETE /api/v1/overrides/{target...}", g.adminOnly(http.HandlerFunc(g.deleteOverride)))
	mux.Handle("GET /api/v1/degrade", g.adminOnly(http.HandlerFunc(g.getDegrade)))
	mux.Handle("PUT /api/v1/degrade", g.adminOnly(http.HandlerFunc(g.putDegrade)))
	mux.Handle("GET /api/v1/audit", g.adminOnly(http.HandlerFunc(g.getAudit)))
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeText(w, http.StatusForbidden, "cross-origin request refused: the admin endpoints take no requests from web pages\n")
	}))
	return cop.Handler(mux)
}

// adminOnly lets a request through to h if it carries an admin token
// (admin.token or one of admin.tokens: its name goes with the request, for
// the audit trail) or, when none is configured, names this admin address
// as its Host.
func (g *Gateway) adminOnly(h http.Handler) http.Handler {
	tokens, addr := adminTokens(g.opts.Config), g.opts.Config.Admin
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(tokens) > 0 {
			// The scheme is case-insensitive (RFC 9110 section 11.1).
			// Comparing digests in constant time reveals neither a
			// token nor its length; every token is compared, so the
			// time does not say which one matched.
			scheme, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
			got := sha256.Sum256([]byte(cred))
			name := ""
			for _, t := range tokens {
				if subtle.ConstantTimeCompare(got[:], t.digest[:]) == 1 {
					name = t.name
				}
			}
			if name == "" || !strings.EqualFold(scheme, "Bearer") {
				w.Header().Set("WWW-Authenticate", `Bearer realm="sluice admin"`)
				writeText(w, http.StatusUnauthorized, "admin token required (Authorization: Bearer TOKEN, the admin.token or one of admin.tokens of the configuration)\n")
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), tokenKey{}, name))
		} else if !adminHost(r.Host, addr) {
			writeText(w, http.StatusForbidden, fmt.Sprintf("Host %q is not this admin address (an IP address, localhost or the admin address's host name; or set admin.token)\n", r.Host))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// namedToken is an admin token's name and digest.
type namedToken struct {
	name   string
	digest [sha256.Size]byte
}

// adminTokens lists cfg's admin tokens: admin.token as "admin", then
// admin.tokens by name.
func adminTokens(cfg *config.File) []namedToken {
	var out []namedToken
	if cfg.AdminToken != "" {
		out = append(out, namedToken{name: "admin", digest: sha256.Sum256([]byte(cfg.AdminToken))})
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.AdminTokens)) {
		out = append(out, namedToken{name: name, digest: sha256.Sum256([]byte(cfg.AdminTokens[name]))})
	}
	return out
}

// tokenKey is the context key of the admin token's name a request carried.
type tokenKey struct{}

// tokenName is the name of the admin token r carried, "" for none.
func tokenName(r *http.Request) string {
	name, _ := r.Context().Value(tokenKey{}).(string)
	return name
}

// adminHost reports whether a request's Host names the admin server
// listening on addr: an IP address, localhost, or addr's own host name.
func adminHost(host, addr string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return true // no Host (HTTP/1.0): not a browser, which always sends one
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	own, _, _ := net.SplitHostPort(addr)
	return strings.EqualFold(host, "localhost") || strings.EqualFold(host, own)
}

// logWarnings logs each of cfg's warnings (dangerous but working
// settings), at start and after each reload.
func (g *Gateway) logWarnings(cfg *config.File) {
	for _, w := range cfg.Warnings {
		g.log.Warn("configuration warning", "file", w.File, "line", w.Line, "col", w.Col, "warning", w.Msg)
	}
}

// readyz answers 200 while the gateway serves, with the store's state in
// the body; 503 while it shuts down.
func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	if p, ok := g.store.(interface{ Probe(context.Context) }); ok {
		p.Probe(r.Context()) // an idle instance learns that Redis is back
	}
	state := "store: " + storeState(g.store) + "\n"
	if !g.ready.Load() {
		writeText(w, http.StatusServiceUnavailable, "shutting down\n"+state)
		return
	}
	cfg := g.config()
	writeText(w, http.StatusOK, fmt.Sprintf("ready\n%srules: %d\n", state, cfg.Compiled.Rules()))
}

// storeState names the store's state for /readyz: a store may report it
// (the Redis store: shared or degraded); the memory store is always local.
func storeState(s any) string {
	if st, ok := s.(interface{ State() string }); ok {
		return st.State()
	}
	return "local"
}

func writeText(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}
