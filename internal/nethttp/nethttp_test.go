package nethttp_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/nethttp"
)

// TestHeader: an http.Header read as the Engine reads fields.
func TestHeader(t *testing.T) {
	h := nethttp.Header{"X-Api-Key": {"a", "b"}, "X_api_key": {"c"}}
	if got := h.Values(nil, "X-Api-Key"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Values: %q", got)
	}
	names := h.Names(nil)
	slices.Sort(names)
	if !slices.Equal(names, []string{"X-Api-Key", "X_api_key"}) {
		t.Errorf("Names: %q", names)
	}
}

// TestSetFields: a later field replaces an earlier one of its name, and
// the values are copies.
func TestSetFields(t *testing.T) {
	v1, v2 := []byte("1"), []byte("2")
	h := http.Header{"Ratelimit": {"old"}, "X-Other": {"kept"}}
	nethttp.SetFields(h, []decision.Field{{Name: "Ratelimit", Value: v1}, {Name: "Retry-After", Value: []byte("7")}, {Name: "Ratelimit", Value: v2}})
	v2[0] = 'x'
	if h.Get("Ratelimit") != "2" || h.Get("Retry-After") != "7" || h.Get("X-Other") != "kept" || len(h["Ratelimit"]) != 1 {
		t.Errorf("fields: %v", h)
	}
}

// TestWriteProblem: the problem+json answer, with the fields already set.
func TestWriteProblem(t *testing.T) {
	w := httptest.NewRecorder()
	w.Header().Set("Retry-After", "3")
	body := nethttp.Problem(http.StatusTooManyRequests, "retry in 3s")
	nethttp.WriteProblem(w, http.StatusTooManyRequests, body)
	h := w.Result().Header
	if w.Code != 429 || h.Get("Content-Type") != "application/problem+json" || h.Get("Cache-Control") != "no-store" ||
		h.Get("Retry-After") != "3" || h.Get("Content-Length") != strconv.Itoa(len(body)) {
		t.Errorf("answer %d %v", w.Code, h)
	}
	if got := w.Body.String(); !strings.Contains(got, `"title":"Too Many Requests"`) || !strings.Contains(got, `"detail":"retry in 3s"`) {
		t.Errorf("body %s", got)
	}
}
