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

// The three hooks: a key of the program's own (a tenant and a user
// combined), a refusal in the program's own format, and health checks
// left alone.
func ExampleOptions_hooks() {
	pol, err := policy.Compile(policy.Policy{Rules: []policy.Rule{{
		Name: "api", Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 1, Period: time.Minute},
	}}})
	if err != nil {
		log.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) // only to make the output exact
	st := memory.New(memory.Options{Clock: clk})
	defer st.Close()
	lim, err := httplimit.New(httplimit.Options{Policy: pol, Store: st, Clock: clk,
		Key: func(r *http.Request, rule string) (string, bool) {
			tenant, user := r.Header.Get("X-Tenant"), r.Header.Get("X-User") // in a program: from its authentication
			return httplimit.JoinKey(tenant, user), user != ""
		},
		Reject: func(w http.ResponseWriter, r *http.Request, ref *httplimit.Refusal) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(ref.Status)
			fmt.Fprintf(w, `{"error":"slow down","retry_in_s":%.0f}`, ref.RetryAfter.Seconds())
		},
		Skip: func(r *http.Request) bool { return r.URL.Path == "/healthz" },
	})
	if err != nil {
		log.Fatal(err)
	}
	handler := lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))

	send := func(path, tenant, user string) {
		r := httptest.NewRequest("GET", path, nil)
		r.Header.Set("X-Tenant", tenant)
		r.Header.Set("X-User", user)
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		fmt.Println(path, tenant, user, w.Code, w.Body.String())
	}
	send("/claims", "acme", "ann")
	send("/claims", "acme", "ann")
	send("/claims", "acme", "bob")
	send("/healthz", "acme", "ann")
	// Output:
	// /claims acme ann 200 ok
	// /claims acme ann 429 {"error":"slow down","retry_in_s":60}
	// /claims acme bob 200 ok
	// /healthz acme ann 200 ok
}
