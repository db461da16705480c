package client

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/clock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// epoch is where every fake clock starts.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// jumpClock is a fake clock on which every wait ends at once: NewTicker
// records the wait and advances the clock by it, so the ticker has fired
// before anyone reads it. Tests read Waits to see what the Transport
// waited, and never sleep.
type jumpClock struct {
	*clock.Fake
	mu    sync.Mutex
	waits []time.Duration
	// deciding is held, shared, by every request a server wrapped in
	// decide is deciding, and taken by a jump: the clock never jumps
	// between a decision's reading of it and its commit. A real clock
	// moves by microseconds there; a jump of a whole refill would let a
	// decision read before it commit after one read after it, which a
	// bucket that remembers no time of its own (GCRA) reads as that much
	// fuller.
	deciding sync.RWMutex
}

func newJumpClock() *jumpClock { return &jumpClock{Fake: clock.NewFake(epoch)} }

func (c *jumpClock) NewTicker(d time.Duration) clock.Ticker {
	tk := c.Fake.NewTicker(d)
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	c.deciding.Lock()
	c.Fake.Advance(d)
	c.deciding.Unlock()
	return tk
}

// decide wraps a server's handler so that no jump comes while it decides
// a request (deciding).
func (c *jumpClock) decide(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.deciding.RLock()
		defer c.deciding.RUnlock()
		h.ServeHTTP(w, r)
	})
}

// Waits returns the waits so far and forgets them.
func (c *jumpClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.waits
	c.waits = nil
	return w
}

// half is a Rand that always draws the middle.
func half() float64 { return 0.5 }

// server is an httptest server on 127.0.0.1 that answers each request by
// calling answer with the request's number (from 1), and counts them.
type server struct {
	*httptest.Server
	n atomic.Int64
}

func newServer(t *testing.T, answer func(n int64, w http.ResponseWriter, r *http.Request)) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer(s.n.Add(1), w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// transport is a Transport on clk with Rand half, its connections closed
// at the end of the test.
func transport(t *testing.T, clk clock.Clock) *Transport {
	t.Helper()
	tr := &Transport{Base: &http.Transport{}, Clock: clk, Rand: half}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// get sends a GET to url through tr and returns the status, failing the
// test on an error.
func get(t *testing.T, tr http.RoundTripper, url string) int {
	t.Helper()
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
