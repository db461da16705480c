package client_test

import (
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluice-rl/sluice/client"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store/memory"
)

// The zero Transport wraps http.DefaultTransport: it paces on the RateLimit
// headers the server sends and retries a 429 or 503 when that is safe.
func Example() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit-Policy", `"claims";q=100;w=60`)
		w.Header().Set("RateLimit", `"claims";r=57;t=23`)
		fmt.Fprintln(w, "claim 42: open")
	}))
	defer api.Close()

	c := &http.Client{Transport: &client.Transport{}}
	defer c.CloseIdleConnections()
	resp, err := c.Get(api.URL + "/claims/42")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status)
	// Output: 200 OK
}

// When the server's quota is spent until later than the caller may wait,
// the request fails at once, unsent, with a *WaitError, instead of earning
// a 429.
func ExampleWaitError() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit", `"daily";r=0;t=3600`)
	}))
	defer api.Close()

	c := &http.Client{Transport: &client.Transport{MaxWait: 10 * time.Second}}
	defer c.CloseIdleConnections()
	for range 2 {
		resp, err := c.Get(api.URL)
		var we *client.WaitError
		switch {
		case errors.As(err, &we):
			fmt.Printf("not sent: %s holds requests for %v, past %s\n", we.Cause, we.Wait.Round(time.Minute), we.Bound)
		case err != nil:
			log.Fatal(err)
		default:
			resp.Body.Close()
			fmt.Println(resp.Status, "RateLimit:", resp.Header.Get("RateLimit"))
		}
	}
	// Output:
	// 200 OK RateLimit: "daily";r=0;t=3600
	// not sent: RateLimit policy "daily" holds requests for 1h0m0s, past MaxWait 10s
}

// An outbound limit of the caller's own toward a dependency: at most 20
// requests a second (gcra, on a memory store; a Redis store shares the
// budget among a fleet of workers), and at most 8 in flight, fewer while
// the dependency answers 503 or times out.
func ExampleOutbound() {
	partner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer partner.Close()

	st := memory.New(memory.Options{})
	defer st.Close()
	rate, err := limiter.New(limiter.GCRA, 20, time.Second, 5)
	if err != nil {
		log.Fatal(err)
	}
	c := &http.Client{Transport: &client.Transport{Outbound: &client.Outbound{
		Limit:       rate,
		Store:       st,
		Key:         "partner-b",
		MaxInFlight: 8,
	}}}
	defer c.CloseIdleConnections()
	resp, err := c.Get(partner.URL)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output: 200 OK
}
