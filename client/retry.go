package client

import (
	"fmt"
	"net/http"
	"time"
)

// retryStatus reports the answers a Transport retries: 429 (the caller is
// over a limit) and 503 (the service is; RFC 9110 lets it send
// Retry-After).
func retryStatus(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable
}

// canRetry reports whether req may be sent again: an idempotent method
// (RFC 9110 section 9.2.2) or an Idempotency-Key, and a body that can be
// replayed.
func canRetry(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
	default:
		if req.Header.Get("Idempotency-Key") == "" {
			return false
		}
	}
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// rewind returns a copy of req to send again, with a fresh body from
// GetBody.
func rewind(req *http.Request) (*http.Request, error) {
	r := req.Clone(req.Context())
	if req.Body == nil || req.Body == http.NoBody {
		return r, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: the body for a retry: %w", req.Method, req.URL.Redacted(), err)
	}
	r.Body = body
	return r, nil
}

// WaitError is returned, with no request sent, when a request would have
// had to wait longer than the Transport may: past MaxWait or past the
// request's context deadline.
type WaitError struct {
	// Host is the request's host.
	Host string
	// Cause names what holds the request: `RateLimit policy "claims"`,
	// "Retry-After", "outbound rate", "outbound in-flight limit".
	Cause string
	// Wait is how long the request would have waited (0 when not known).
	Wait time.Duration
	// Bound says what the wait would have passed.
	Bound string
}

func (e *WaitError) Error() string {
	if e.Wait > 0 {
		return fmt.Sprintf("client: %s: %s holds requests for %v, past %s", e.Host, e.Cause, e.Wait.Round(time.Millisecond), e.Bound)
	}
	return fmt.Sprintf("client: %s: %s holds requests past %s", e.Host, e.Cause, e.Bound)
}
