package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/store"
)

// TestNewWithoutStore: without Options.Store the Limiter counts in a memory
// store of its own, as sluice.New does, and Close closes it: a request
// after Close finds the store closed and is answered by OnFailure.
func TestNewWithoutStore(t *testing.T) {
	clk := clock.NewFake(epoch)
	lim, err := httplimit.New(httplimit.Options{Policy: compile(t, byIP(2)), Clock: clk, OnFailure: store.FailClosed})
	if err != nil {
		t.Fatalf("New without a store: %v", err)
	}
	h := lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	get := func() int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/claims", nil))
		return w.Code
	}
	for i, want := range []int{200, 200, 429} {
		if got := get(); got != want {
			t.Fatalf("request %d: %d, want %d", i+1, got, want)
		}
	}
	clk.Advance(time.Minute)
	if got := get(); got != 200 {
		t.Fatalf("a minute later: %d, want 200", got)
	}
	if err := lim.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := get(); got != http.StatusServiceUnavailable {
		t.Errorf("after Close: %d, want 503 (the store closed, failing closed)", got)
	}
}
