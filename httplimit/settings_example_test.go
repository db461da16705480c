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

// A program that swaps whole configurations (policy and what serves the
// request together) builds one handler per configuration with HandlerWith
// and swaps the handler: a request is decided and served under the same
// one, whatever SetPolicy does meanwhile.
func ExampleLimiter_HandlerWith() {
	compile := func(name string) *policy.Compiled {
		pol, err := policy.Compile(policy.Policy{Rules: []policy.Rule{{
			Name: name, Key: policy.KeySpec{Kind: policy.KeyGlobal},
			Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 10, Period: time.Second},
		}}})
		if err != nil {
			log.Fatal(err)
		}
		return pol
	}
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	st := memory.New(memory.Options{Clock: clk})
	defer st.Close()
	lim, err := httplimit.New(httplimit.Options{Policy: compile("v1"), Store: st, Clock: clk})
	if err != nil {
		log.Fatal(err)
	}
	serve := func(version string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, version) })
	}
	v2 := lim.HandlerWith(httplimit.Settings{Policy: compile("v2")}, serve("served by v2"))
	lim.SetPolicy(compile("v3")) // changes Handler's requests, not v2's

	w := httptest.NewRecorder()
	v2.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	fmt.Println(w.Header().Get("RateLimit-Policy"), w.Body.String())
	// Output:
	// "v2";q=10;w=1 served by v2
}
