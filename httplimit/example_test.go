package httplimit_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store/memory"
)

// A Go program puts the limiter in front of its own handler: a policy built
// in code (2 requests per second per caller IP), an in-memory store, and
// Handler around the mux. The fake clock only makes the output
// deterministic; a program leaves Clock unset for the real one.
func Example() {
	pol, err := policy.Compile(policy.Policy{
		Rules: []policy.Rule{{
			Name:      "api",
			Key:       policy.KeySpec{Kind: policy.KeyIP},
			Algorithm: limiter.FixedWindow,
			Rate:      policy.Rate{N: 2, Period: time.Second},
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	st := memory.New(memory.Options{Clock: clk})
	defer st.Close()
	lim, err := httplimit.New(httplimit.Options{Policy: pol, Store: st, Clock: clk})
	if err != nil {
		log.Fatal(err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	handler := lim.Handler(mux) // in a program: http.ListenAndServe(addr, handler)

	for range 3 {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequest("GET", "/hello", nil))
		if w.Code == http.StatusOK {
			fmt.Println(w.Code, "RateLimit:", w.Header().Get("RateLimit"))
		} else {
			fmt.Println(w.Code, "Retry-After:", w.Header().Get("Retry-After"))
		}
	}
	// Output:
	// 200 RateLimit: "api";r=1;t=1
	// 200 RateLimit: "api";r=0;t=1
	// 429 Retry-After: 1
}
