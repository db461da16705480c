package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// tooMany answers 429 with the given headers to the first n requests and
// 200 after.
func tooMany(n int64, header http.Header) func(int64, http.ResponseWriter, *http.Request) {
	return func(i int64, w http.ResponseWriter, r *http.Request) {
		if i > n {
			return
		}
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, "slow down")
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	for _, c := range []struct {
		name, value string
		want        time.Duration
	}{
		{"seconds", "2", 2*time.Second + 100*time.Millisecond}, // 2s and a tenth of it at half: 0.1s
		{"date", epoch.Add(10 * time.Second).Format(http.TimeFormat), 10*time.Second + 500*time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := newJumpClock()
			srv := newServer(t, tooMany(1, http.Header{"Retry-After": {c.value}}))
			if code := get(t, transport(t, clk), srv.URL); code != http.StatusOK {
				t.Fatalf("status %d, want 200 after one retry", code)
			}
			if srv.n.Load() != 2 {
				t.Errorf("%d requests, want 2", srv.n.Load())
			}
			// The retry waits once; the host's hold has passed by then.
			if w := clk.Waits(); !slices.Equal(w, []time.Duration{c.want}) {
				t.Errorf("waits %v, want [%v]", w, c.want)
			}
		})
	}
}

// A Retry-After that is malformed, or a 429 without any header, falls back
// to the capped exponential backoff: 100ms, 200ms, 400ms, each half random
// (75ms, 150ms, 300ms at half); one longer than MaxWait is not waited for.
func TestRetryBadInput(t *testing.T) {
	backoff := []time.Duration{75 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond}
	for _, c := range []struct {
		name   string
		header http.Header
		waits  []time.Duration
		status int
	}{
		{"no headers", nil, backoff, 200},
		{"negative", http.Header{"Retry-After": {"-1"}}, backoff, 200},
		{"garbage", http.Header{"Retry-After": {"tomorrow-ish"}}, backoff, 200},
		{"a fraction", http.Header{"Retry-After": {"0.5"}}, backoff, 200},
		{"a date in the past", http.Header{"Retry-After": {"Mon, 01 Jan 2001 00:00:00 GMT"}}, backoff, 200},
		{"zero", http.Header{"Retry-After": {"0"}}, backoff, 200},
		{"malformed RateLimit", http.Header{"Ratelimit": {`"a";r=-1;t=9`}, "Ratelimit-Policy": {`garbage(`}}, backoff, 200},
		{"huge: returned at once", http.Header{"Retry-After": {"99999999999999999999"}}, nil, 429},
		{"RateLimit's t stands in for it", http.Header{"Ratelimit": {`"a";r=0;t=2`}},
			[]time.Duration{2100 * time.Millisecond, 2100 * time.Millisecond, 2100 * time.Millisecond}, 200},
		{"RateLimit's t past MaxWait: returned at once", http.Header{"Ratelimit": {`"a";r=0;t=3600`}}, nil, 429},
		{"past MaxWait: returned at once", http.Header{"Retry-After": {"31"}}, nil, 429},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := newJumpClock()
			srv := newServer(t, tooMany(3, c.header))
			if code := get(t, transport(t, clk), srv.URL); code != c.status {
				t.Fatalf("status %d, want %d", code, c.status)
			}
			if w := clk.Waits(); !slices.Equal(w, c.waits) {
				t.Errorf("waits %v, want %v", w, c.waits)
			}
		})
	}
}

func TestBackoffCappedByMaxWait(t *testing.T) {
	clk := newJumpClock()
	srv := newServer(t, tooMany(1000, nil))
	tr := transport(t, clk)
	tr.MaxWait, tr.MaxRetries, tr.MinBackoff = time.Second, 5, 300*time.Millisecond
	if code := get(t, tr, srv.URL); code != http.StatusTooManyRequests {
		t.Fatalf("status %d, want the last 429", code)
	}
	want := []time.Duration{225 * time.Millisecond, 450 * time.Millisecond, 750 * time.Millisecond, 750 * time.Millisecond, 750 * time.Millisecond}
	if w := clk.Waits(); !slices.Equal(w, want) {
		t.Errorf("waits %v, want %v", w, want)
	}
}

// A wait that would pass the request's deadline is not made: the 429 comes
// back at once, body and all.
func TestDeadlineReturns429AtOnce(t *testing.T) {
	clk := newJumpClock()
	srv := newServer(t, tooMany(1, http.Header{"Retry-After": {"5"}}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	resp, err := transport(t, clk).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || string(body) != "slow down" || srv.n.Load() != 1 {
		t.Errorf("status %d, body %q, %d requests; want the first 429 as it came", resp.StatusCode, body, srv.n.Load())
	}
	if w := clk.Waits(); len(w) != 0 {
		t.Errorf("waited %v", w)
	}
}

func TestOnlySafeRequestsRetried(t *testing.T) {
	for _, c := range []struct {
		name     string
		req      func(url string) *http.Request
		requests int64
	}{
		{"POST", func(url string) *http.Request {
			r, _ := http.NewRequest("POST", url, strings.NewReader("claim"))
			return r
		}, 1},
		{"POST with an Idempotency-Key", func(url string) *http.Request {
			r, _ := http.NewRequest("POST", url, strings.NewReader("claim"))
			r.Header.Set("Idempotency-Key", "k-1")
			return r
		}, 2},
		{"PUT with a body it cannot replay", func(url string) *http.Request {
			r, _ := http.NewRequest("PUT", url, io.NopCloser(strings.NewReader("claim")))
			return r
		}, 1},
		{"PUT with a replayable body", func(url string) *http.Request {
			r, _ := http.NewRequest("PUT", url, bytes.NewReader([]byte("claim")))
			return r
		}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			var bodies []string
			srv := newServer(t, func(n int64, w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				bodies = append(bodies, string(b))
				tooMany(1, nil)(n, w, r)
			})
			resp, err := transport(t, newJumpClock()).RoundTrip(c.req(srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if srv.n.Load() != c.requests {
				t.Errorf("%d requests, want %d", srv.n.Load(), c.requests)
			}
			for _, b := range bodies {
				if b != "claim" {
					t.Errorf("bodies %q: each should be the whole body", bodies)
				}
			}
		})
	}
}

// A dependency that refuses everything sees at most a tenth more requests
// than the callers make (plus the reserve), not MaxRetries times as many.
func TestRetryBudget(t *testing.T) {
	srv := newServer(t, tooMany(1<<40, nil))
	tr := transport(t, newJumpClock())
	tr.Budget = RetryBudget{Ratio: 0.1, Reserve: 2}
	const calls = 100
	for range calls {
		get(t, tr, srv.URL)
	}
	// 2 saved up, then one per ten requests: 100 × 0.1 = 10, less what the
	// reserve's cap lost at the start (a few tenths).
	if extra := srv.n.Load() - calls; extra < 10 || extra > 12 {
		t.Errorf("%d retries for %d requests, want 10 to 12", extra, calls)
	}
}

// A 503's Retry-After holds the host's other requests, even those that are
// not retried.
func TestRetryAfterHoldsTheHost(t *testing.T) {
	clk := newJumpClock()
	srv := newServer(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	tr := transport(t, clk)
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader("x"))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Fatalf("status %d, want the POST's 503 unretried", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	resp, err = tr.RoundTrip(req)
	var we *WaitError
	if !errors.As(err, &we) || we.Cause != "Retry-After" || srv.n.Load() != 1 {
		t.Fatalf("RoundTrip = %v, %v in a 7s hold with a 1s deadline; want a *WaitError and nothing sent", resp, err)
	}
	t.Log(err)
	if code := get(t, tr, srv.URL); code != 200 {
		t.Fatalf("status %d", code)
	}
	if w := clk.Waits(); !slices.Equal(w, []time.Duration{7 * time.Second}) {
		t.Errorf("waits %v, want the hold [7s]", w)
	}
}
