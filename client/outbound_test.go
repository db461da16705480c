package client

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store/memory"
	"github.com/sluice-rl/sluice/store/redis"
)

func mustLimit(t *testing.T, alg limiter.Algorithm, rate int64, period time.Duration, burst int64) limiter.Limit {
	t.Helper()
	l, err := limiter.New(alg, rate, period, burst)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The outbound rate holds requests to their turn: gcra 5/s with a burst
// of 1 sends one request every 200ms.
func TestOutboundRate(t *testing.T) {
	clk := newJumpClock()
	st := memory.New(memory.Options{Clock: clk.Fake})
	defer st.Close()
	srv := newServer(t, func(int64, http.ResponseWriter, *http.Request) {})
	tr := transport(t, clk)
	tr.Outbound = &Outbound{Limit: mustLimit(t, limiter.GCRA, 5, time.Second, 1), Store: st}
	for range 4 {
		get(t, tr, srv.URL)
	}
	want := []time.Duration{200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond}
	if w := clk.Waits(); !slices.Equal(w, want) {
		t.Errorf("waits %v, want %v", w, want)
	}
}

// Two workers (two Transports, as two processes would have) share one
// budget in Redis: a bucket of 3 refilled at 3 an hour, and the 4th
// request, whose turn is 20 minutes away, past MaxWait, fails at once
// without being sent. (A bucket, not a fixed window: a window boundary
// passing during the test would refill it.)
func TestOutboundRateSharedInRedis(t *testing.T) {
	rs := redistest.StartServer(t)
	st, err := redis.New(context.Background(), redis.Options{Addrs: []string{rs.Addr}, Prefix: redistest.KeyPrefix(t), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := newServer(t, func(int64, http.ResponseWriter, *http.Request) {})
	lim := mustLimit(t, limiter.TokenBucket, 3, time.Hour, 3)
	var workers [2]*Transport
	for i := range workers {
		workers[i] = transport(t, newJumpClock())
		workers[i].MaxWait = time.Second
		workers[i].Outbound = &Outbound{Limit: lim, Store: st, Key: "partner-api"}
	}
	for i := range 3 {
		if code := get(t, workers[i%2], srv.URL); code != 200 {
			t.Fatalf("request %d: status %d", i, code)
		}
	}
	_, err = (&http.Client{Transport: workers[1]}).Get(srv.URL)
	var we *WaitError
	if !errors.As(err, &we) || we.Cause != "outbound rate" || srv.n.Load() != 3 {
		t.Fatalf("4th request: %v, %d sent; want a *WaitError for the outbound rate and 3 sent", err, srv.n.Load())
	}
	t.Log(err)
}

// The in-flight cap halves after a second of 503s (or of timeouts) and
// grows back after a healthy second.
func TestOutboundInFlightFollowsHealth(t *testing.T) {
	for _, c := range []struct {
		name string
		fail func(t *testing.T, tr *Transport, url string)
	}{
		{"503", func(t *testing.T, tr *Transport, url string) {
			if code := get(t, tr, url+"/fail"); code != 503 {
				t.Fatalf("status %d", code)
			}
		}},
		{"timeout", func(t *testing.T, tr *Transport, url string) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", url+"/hang", nil)
			if _, err := tr.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err %v, want a timeout", err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			srv := newServer(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/fail":
					w.WriteHeader(http.StatusServiceUnavailable)
				case "/hang":
					<-r.Context().Done()
				}
			})
			tr := transport(t, clk)
			tr.MaxRetries = -1
			tr.Outbound = &Outbound{MaxInFlight: 2, MinInFlight: 1}
			window := func(f func()) {
				for range 20 {
					f()
				}
				clk.Advance(time.Second)
				f() // closes the window
			}
			window(func() { c.fail(t, tr, srv.URL) })
			if got := tr.s.out.th.Limit(); got != 1 {
				t.Fatalf("limit %d after a failing second, want 1", got)
			}
			window(func() { get(t, tr, srv.URL) })
			if got := tr.s.out.th.Limit(); got != 2 {
				t.Fatalf("limit %d after a healthy second, want 2", got)
			}
		})
	}
}

// An Outbound that cannot work fails every request, unsent, with what is
// wrong.
func TestOutboundBadConfig(t *testing.T) {
	srv := newServer(t, func(int64, http.ResponseWriter, *http.Request) {})
	for _, c := range []struct {
		o    Outbound
		want string
	}{
		{Outbound{Limit: mustLimit(t, limiter.TokenBucket, 1, time.Second, 0)}, "client: Outbound.Limit needs a Store"},
		{Outbound{MaxInFlight: -1}, "client: Outbound.MaxInFlight -1"},
		{Outbound{MaxInFlight: 2, MinInFlight: 3}, "client: Outbound.MaxInFlight 2, MinInFlight 3"},
		{Outbound{MaxInFlight: 2, LatencyTarget: -time.Second}, "LatencyTarget -1s"},
	} {
		tr := transport(t, newJumpClock())
		tr.Outbound = &c.o
		_, err := (&http.Client{Transport: tr}).Get(srv.URL)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.o, err, c.want)
		}
	}
	if srv.n.Load() != 0 {
		t.Errorf("%d requests sent", srv.n.Load())
	}
}
