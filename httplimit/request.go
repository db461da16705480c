package httplimit

import (
	"errors"
	"net/http"

	"github.com/sluice-rl/sluice/policy"
)

// scrubHeaders removes the headers a caller must not pass on, in every
// spelling an upstream may read as the same (policy.SameHeaderName):
// X-Sluice-Client, which only sluice writes; the override headers, which
// would make the upstream serve another method or path than the one
// counted (policy.RemovedHeader); and every spelling of the key header
// other than key itself (its canonical name, "" when the policy reads no
// key), which the upstream might take for the key sluice did not see.
func scrubHeaders(h http.Header, key string) {
	for k := range h {
		if key != "" && k != key && policy.SameHeaderName(k, key) || policy.RemovedHeader(k) {
			delete(h, k)
		}
	}
}

// cleanRequest returns r with the method and path that rules match and
// the handler receives (policy.CanonicalMethod, policy.CleanPath): r itself
// when they are spelled so already, else a shallow copy of r with its own
// URL, and a RequestURI (when r has one) to match, so that a handler that
// proxies by RequestURI sends on what was counted. It fails with a
// *policy.PathError when the path has no one reading.
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
	if r.RequestURI != "" {
		c.RequestURI = u.RequestURI()
	}
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
