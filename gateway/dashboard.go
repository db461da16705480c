package gateway

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
)

// The dashboard is one page and its script and style, embedded in the
// binary: nothing is fetched from elsewhere, so it works offline.
//
//go:embed dashboard/index.html dashboard/app.js dashboard/style.css
var dashboardFiles embed.FS

// dashboardPolicy keeps the page to its own files: no inline script, no
// other origin, no framing (clickjacking), and fetches only to this
// admin address.
const dashboardPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"

// dashboardHandler serves GET / (the page) and GET /dashboard/NAME (its
// script and style). The page holds no data: it reads /api/v1/overview,
// which asks for the admin token, so the page itself is open (it asks for
// the token when the overview refuses it).
func dashboardHandler() http.Handler {
	files, _ := fs.Sub(dashboardFiles, "dashboard") // the embedded directory exists
	types := map[string]string{".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := path.Base(r.URL.Path)
		if r.URL.Path == "/" {
			name = "index.html"
		}
		body, err := fs.ReadFile(files, name)
		if err != nil || r.URL.Path != "/" && r.URL.Path != "/dashboard/"+name {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", types[path.Ext(name)])
		h.Set("Content-Security-Policy", dashboardPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		_, _ = w.Write(body)
	})
}
