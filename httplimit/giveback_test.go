package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store/memory"
	"github.com/sluice-rl/sluice/throttle"
)

// TestPanicsGiveEverythingBack: whatever panics once a request holds a
// throttle slot, a concurrency lease and a reservation to settle (the
// handler, the program's OnDecision, its OnSettle or its OnResponse), the
// slot and the lease are given back and the panic goes on: the next
// request passes. Before, a panic in OnDecision (after the throttle had
// admitted the request) or in a step after the response (OnSettle) left
// the slot taken for good, one fewer for every later request.
func TestPanicsGiveEverythingBack(t *testing.T) {
	for _, where := range []string{"handler", "OnDecision", "OnSettle", "OnResponse"} {
		t.Run(where, func(t *testing.T) {
			thr, err := throttle.New(throttle.Config{MaxInFlight: 1})
			if err != nil {
				t.Fatal(err)
			}
			var armed atomic.Bool
			boom := func(at string) {
				if at == where && armed.Load() {
					panic("boom in " + at)
				}
			}
			rules := []policy.Rule{
				{Name: "tokens", Key: policy.KeySpec{Kind: policy.KeyGlobal}, Algorithm: limiter.TokenBucket,
					Rate: rate(100, time.Hour), CostHeader: "X-Cost"},
				{Name: "one", Key: policy.KeySpec{Kind: policy.KeyGlobal}, Concurrency: 1},
			}
			mem := memory.New(memory.Options{Clock: clock.NewFake(epoch)})
			defer mem.Close()
			h := newHarness(t, policy.Policy{Rules: rules}, func(o *httplimit.Options) {
				o.Store, o.Leaser = mem, mem
				o.Throttle = thr
				o.OnDecision = func(*http.Request, *httplimit.Report) { boom("OnDecision") }
				o.OnSettle = func(*http.Request, string, error) { boom("OnSettle") } // no X-Cost: always called
				o.OnResponse = func(*http.Request, *httplimit.Response) { boom("OnResponse") }
			})
			handler := h.lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				boom("handler")
				w.WriteHeader(http.StatusOK)
			}))
			armed.Store(true)
			func() {
				defer func() {
					if p := recover(); p == nil {
						t.Error("the panic did not go on")
					}
				}()
				handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
			}()
			armed.Store(false)
			if st := thr.Stats(); st.InFlight != 0 {
				t.Errorf("in flight after the panic: %d, want 0", st.InFlight)
			}
			w := httptest.NewRecorder()
			handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
			wantStatus(t, w, http.StatusOK, "the next request")
		})
	}
}
