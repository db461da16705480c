package promlimit_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/promlimit"
)

// TestObserveAllocatesNothing: recording a request's decision, passed or
// answered by sluice, allocates nothing once its series exist (it runs
// for every request the gateway answers).
func TestObserveAllocatesNothing(t *testing.T) {
	s := promlimit.NewSeries(promlimit.Options{})
	for _, status := range []int{0, http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden,
		http.StatusTooManyRequests, http.StatusServiceUnavailable, httplimit.StatusClientGone, 418} {
		rep := &httplimit.Report{Client: "partner-a", Status: status, Latency: time.Millisecond}
		s.Observe(rep) // the series are made
		if n := testing.AllocsPerRun(100, func() { s.Observe(rep) }); n != 0 {
			t.Errorf("status %d: %v allocations per Observe, want 0", status, n)
		}
	}
}
