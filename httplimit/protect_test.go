package httplimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/throttle"
)

// A Limiter with a Throttle of 2 slots, shedding from 1 (half the limit)
// with every draw shedding: with one request held at the handler, low and
// degrade requests are refused 503 naming why, critical ones pass, and the
// held slot is released after its response.
func TestThrottlePriorities(t *testing.T) {
	thr, err := throttle.New(throttle.Config{MaxInFlight: 2, ShedFrom: 0.5, Rand: func() float64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	p := policy.Policy{Rules: []policy.Rule{
		{Name: "claims", Match: policy.Match{Path: "/claims"}, Priority: new(throttle.Critical)},
		{Name: "reports", Match: policy.Match{Path: "/reports"}, Priority: new(throttle.Low)},
		{Name: "export", Match: policy.Match{Path: "/export"}, Priority: new(throttle.High), Degrade: true},
		{Name: "everything", Key: policy.KeySpec{Kind: policy.KeyIP}, Rate: rate(1e6, time.Second)}, // sets no priority
	}}
	h := newHarness(t, p, func(o *httplimit.Options) { o.Throttle = thr })
	entered, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(h.lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			close(entered)
			<-release
		}
	})))
	defer srv.Close()
	held := getInBackground(srv.URL + "/hold")
	<-entered
	for _, tc := range []struct {
		path   string
		status int
		reason string
	}{{"/reports", 503, "shed"}, {"/export", 503, "degraded"}, {"/claims", 200, ""}} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Status int    `json:"status"`
			Reason string `json:"reason"`
		}
		if tc.status != 200 {
			_ = json.NewDecoder(resp.Body).Decode(&body)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.status || body.Reason != tc.reason || tc.status == 503 && resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: %d reason %q Retry-After %q, want %d %q", tc.path, resp.StatusCode, body.Reason, resp.Header.Get("Retry-After"), tc.status, tc.reason)
		}
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if st := thr.Stats(); st.InFlight != 0 || st.Refused(throttle.Low, throttle.ReasonShed) != 1 || st.Refused(throttle.High, throttle.ReasonDegraded) != 1 {
		t.Errorf("stats %+v: want nothing in flight once answered, one low shed, one high degraded", st)
	}
	if rep := h.lastReport(); !rep.Throttled || rep.Priority != throttle.Critical || rep.Status != 0 {
		t.Errorf("the /claims report %+v: want passed, throttled at critical", rep.Report)
	}
}

// getInBackground GETs url in a goroutine; its error (nil once the
// answer is read) arrives on the channel.
func getInBackground(url string) <-chan error {
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
		}
		done <- err
	}()
	return done
}

// until polls cond every few milliseconds for at most 10s.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A caller that disconnects while it waits in the queue leaves it and is
// answered nothing (reported as 499); a handler that panics (a proxy
// aborting a response) still gives its slot back.
func TestThrottleCallerGoneAndPanic(t *testing.T) {
	thr, err := throttle.New(throttle.Config{MaxInFlight: 1, Queue: throttle.Queue{MaxLength: 10, MaxWait: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, policy.Policy{Rules: []policy.Rule{{Name: "all", Priority: new(throttle.High)}}},
		func(o *httplimit.Options) { o.Throttle = thr })
	entered, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(h.lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hold":
			close(entered)
			<-release
		case "/panic":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush() // the caller has an answer: its client does not retry
			panic(http.ErrAbortHandler)
		}
	})))
	defer srv.Close()
	held := getInBackground(srv.URL + "/hold")
	<-entered
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(conn, "GET /queued HTTP/1.1\r\nHost: x\r\n\r\n")
	until(t, "the request queued", func() bool { return thr.Stats().QueueLength == 1 })
	_ = conn.Close()
	until(t, "the gone caller left the queue", func() bool { return thr.Stats().QueueLength == 0 })
	until(t, "its report", func() bool { return h.reportCount() == 2 })
	if rep := h.lastReport(); rep.Status != httplimit.StatusClientGone || rep.Refusal != throttle.ReasonCanceled || rep.Priority != throttle.High {
		t.Errorf("report %+v, want 499, canceled, high", rep.Report)
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(srv.URL + "/panic"); err == nil {
		_, _ = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
	}
	until(t, "the panicking request's slot given back", func() bool { return thr.Stats().InFlight == 0 })
	if st := thr.Stats(); st.Admitted != 2 || st.Refused(throttle.High, throttle.ReasonCanceled) != 1 {
		t.Errorf("stats %+v: want 2 admitted, 1 canceled", st)
	}
}

// A wait the server cancels (its context's cause is not context.Canceled:
// a gateway's drain, a deadline) is answered 503 with Retry-After and
// reason canceled, as any refusal: its caller is still waiting.
func TestThrottleServerCancelledWait(t *testing.T) {
	thr, err := throttle.New(throttle.Config{MaxInFlight: 1, Queue: throttle.Queue{MaxLength: 10, MaxWait: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, policy.Policy{Rules: []policy.Rule{{Name: "all", Priority: new(throttle.High)}}},
		func(o *httplimit.Options) { o.Throttle = thr })
	hold := thr.Acquire(context.Background(), throttle.Request{Priority: throttle.Critical})
	defer hold.Release(throttle.Outcome{})
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		w := httptest.NewRecorder()
		h.handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/claims", nil).WithContext(ctx))
		done <- w
	}()
	until(t, "the request queued", func() bool { return thr.Stats().QueueLength == 1 })
	cancel(errors.New("draining"))
	w := <-done
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Content-Type") != "application/problem+json" ||
		w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), `"reason":"canceled"`) {
		t.Errorf("%d %q Retry-After %q %s, want a 503 problem with Retry-After and reason canceled",
			w.Code, w.Header().Get("Content-Type"), w.Header().Get("Retry-After"), w.Body)
	}
}
