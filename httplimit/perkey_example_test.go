package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/limiter"
)

// A limit per caller address in three lines: here 2 requests a minute per
// IP, in this process's memory.
func ExamplePerIP() {
	lim := httplimit.PerIP(limiter.MustNew(limiter.GCRA, 2, time.Minute, 2))
	defer lim.Close()
	handler := lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })) // in a program: http.ListenAndServe(addr, handler)

	for _, from := range []string{"192.0.2.1:1234", "192.0.2.1:1235", "192.0.2.1:1236", "192.0.2.7:1234"} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/hello", nil)
		r.RemoteAddr = from
		handler.ServeHTTP(w, r)
		if w.Code == http.StatusOK {
			fmt.Println(from, w.Code, "RateLimit:", w.Header().Get("RateLimit"))
		} else {
			fmt.Println(from, w.Code, "Retry-After:", w.Header().Get("Retry-After"))
		}
	}
	// Output:
	// 192.0.2.1:1234 200 RateLimit: "per-ip";r=1;t=30
	// 192.0.2.1:1235 200 RateLimit: "per-ip";r=0;t=30
	// 192.0.2.1:1236 429 Retry-After: 30
	// 192.0.2.7:1234 200 RateLimit: "per-ip";r=1;t=30
}
