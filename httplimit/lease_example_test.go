package httplimit_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
)

// A concurrency rule: at most 1 request per caller IP in flight. The
// handler here sends a second request while the first is still in it: that
// one is refused. A store.Renewer over the store keeps the leases of
// requests longer than the lease TTL; Close it before the store.
func Example_concurrency() {
	pol, err := policy.Compile(policy.Policy{
		Rules: []policy.Rule{{Name: "one-at-a-time", Key: policy.KeySpec{Kind: policy.KeyIP}, Concurrency: 1}},
	})
	if err != nil {
		log.Fatal(err)
	}
	st := memory.New(memory.Options{})
	defer st.Close()
	renewer := store.NewRenewer(st, store.RenewerOptions{})
	defer renewer.Close()
	lim, err := httplimit.New(httplimit.Options{Policy: pol, Store: st, Leaser: renewer})
	if err != nil {
		log.Fatal(err)
	}

	var handler http.Handler
	handler = lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/first" { // while the first request is in flight
			second := httptest.NewRecorder()
			handler.ServeHTTP(second, httptest.NewRequest("GET", "/second", nil))
			fmt.Println("second:", second.Code, second.Header().Get("RateLimit"))
		}
	}))
	first := httptest.NewRecorder()
	handler.ServeHTTP(first, httptest.NewRequest("GET", "/first", nil))
	fmt.Println("first:", first.Code, first.Header().Get("RateLimit-Policy"), first.Header().Get("RateLimit"))
	third := httptest.NewRecorder()
	handler.ServeHTTP(third, httptest.NewRequest("GET", "/third", nil))
	fmt.Println("third:", third.Code, third.Header().Get("RateLimit"))
	// Output:
	// second: 429 "one-at-a-time";r=0
	// first: 200 "one-at-a-time";q=1;qu="concurrent-requests" "one-at-a-time";r=0
	// third: 200 "one-at-a-time";r=0
}
