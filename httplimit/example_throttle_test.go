package httplimit_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store/memory"
	"github.com/sluice-rl/sluice/throttle"
)

// A Throttle behind the per-caller rules protects the handler from the sum
// of all callers: here at most one request in the handler at once, and
// /reports is low priority, so it is shed while the handler is busy.
func ExampleOptions_throttle() {
	pol, err := policy.Compile(policy.Policy{Rules: []policy.Rule{
		{Name: "reports", Match: policy.Match{Path: "/reports"}, Priority: new(throttle.Low)},
	}})
	if err != nil {
		log.Fatal(err)
	}
	thr, err := throttle.New(throttle.Config{MaxInFlight: 1})
	if err != nil {
		log.Fatal(err)
	}
	st := memory.New(memory.Options{})
	defer st.Close()
	lim, err := httplimit.New(httplimit.Options{Policy: pol, Store: st, Throttle: thr})
	if err != nil {
		log.Fatal(err)
	}
	var handler http.Handler
	handler = lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/claims" { // while this request holds the one slot
			inner := httptest.NewRecorder()
			handler.ServeHTTP(inner, httptest.NewRequest("GET", "/reports", nil))
			fmt.Println("/reports:", inner.Code, "Retry-After:", inner.Header().Get("Retry-After"))
		}
	}))
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, httptest.NewRequest("GET", "/claims", nil))
	fmt.Println("/claims:", w.Code, "in flight after:", thr.Stats().InFlight)
	// Output:
	// /reports: 503 Retry-After: 1
	// /claims: 200 in flight after: 0
}
