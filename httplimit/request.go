package httplimit

import (
	"errors"
	"net/http"

	"github.com/sluice-rl/sluice/policy"
)

// overrides are the headers with which some upstreams serve a request as
// another one than its request line says: another method (Symfony,
// Express's method-override, ASP.NET Web API, Google's APIs) or another
// path (X-Original-URL and X-Rewrite-URL: IIS URL Rewrite, Symfony and
// Zend behind it). sluice counts the request line, so these never reach
// the handler.
var overrides = [...]string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override",
	"X-Original-Url", "X-Rewrite-Url"}

// scrubHeaders removes the headers a caller must not pass on, in every
// spelling an upstream may read as the same (sameName): X-Sluice-Client,
// which only sluice writes; the override headers, which would make the
// upstream serve another method or path than the one counted; and every
// spelling of the key header other than key itself (its canonical name,
// "" when the policy reads no key), which the upstream might take for the
// key sluice did not see.
func scrubHeaders(h http.Header, key string) {
	for k := range h {
		if sameName(k, ClientHeader) || key != "" && k != key && sameName(k, key) || isOverride(k) {
			delete(h, k)
		}
	}
}

func isOverride(name string) bool {
	for _, o := range overrides {
		if sameName(name, o) {
			return true
		}
	}
	return false
}

// sameName reports whether two header names are the same to some upstream:
// equal regardless of case, with '_' and '-' alike, as CGI-style upstreams
// (PHP, WSGI, Rack) read X-API-Key and X_API_KEY both as HTTP_X_API_KEY.
func sameName(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if foldName(a[i]) != foldName(b[i]) {
			return false
		}
	}
	return true
}

func foldName(c byte) byte {
	switch {
	case c >= 'A' && c <= 'Z':
		return c + 'a' - 'A'
	case c == '_':
		return '-'
	}
	return c
}

// cleanRequest returns r with the method and path that rules match and
// the handler receives (policy.CanonicalMethod, policy.CleanPath): r itself
// when they are spelled so already, else a shallow copy of r with its own
// URL. It fails with a *policy.PathError when the path has no one reading.
func cleanRequest(r *http.Request) (*http.Request, error) {
	method := policy.CanonicalMethod(r.Method)
	raw := r.URL.EscapedPath()
	esc, dec, err := policy.CleanPath(raw)
	if err != nil {
		return r, err
	}
	if method == r.Method && esc == raw {
		return r, nil
	}
	c := *r
	u := *r.URL
	u.Path, u.RawPath = dec, esc
	c.URL, c.Method = &u, method
	return &c, nil
}

// pathDetail is the problem detail of a path cleanRequest refused.
func pathDetail(err error) string {
	var pe *policy.PathError
	if errors.As(err, &pe) {
		return "the request path cannot be read one way only: it has " + pe.Reason
	}
	return err.Error()
}
