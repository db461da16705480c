package gateway

import (
	"context"
	"fmt"
	"net/http"
)

// AdminHandler returns the admin side: /metrics, /healthz, /readyz and
// POST /reload. It must never be served on the callers' address.
func (g *Gateway) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", g.metrics.handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeText(w, http.StatusOK, "ok\n")
	})
	mux.HandleFunc("GET /readyz", g.readyz)
	mux.HandleFunc("POST /reload", func(w http.ResponseWriter, _ *http.Request) {
		if err := g.Reload(); err != nil {
			writeText(w, http.StatusUnprocessableEntity, "reload refused; the previous configuration stays in force:\n"+err.Error()+"\n")
			return
		}
		writeText(w, http.StatusOK, "reloaded\n")
	})
	return mux
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
	cfg := g.cfg.Load()
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
