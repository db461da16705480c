package fastproxy_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/fastproxy"
)

// TestUpstreamUnreachable: 502 with a problem+json body.
func TestUpstreamUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	s := startStand(t, mustURL(t, "http://"+addr), standOptions{fwd: xff})
	rs := s.exchange(t, req("GET /u", "Connection: close"))
	wantProblem(t, rs, 502, "the upstream service could not be reached")
	if got := s.outcomes(); !slices.Equal(got, []fastproxy.Outcome{fastproxy.UpstreamFailed}) {
		t.Errorf("outcomes %v", got)
	}
}

// TestUpstreamTimeout: an upstream that sends nothing of its answer within
// the upstream timeout is given up: 504.
func TestUpstreamTimeout(t *testing.T) {
	release := make(chan struct{})
	up := newUpstream(t, func(http.ResponseWriter, *http.Request) { <-release })
	t.Cleanup(func() { close(release) }) // before the upstream closes
	s := startStand(t, mustURL(t, up.URL), standOptions{fwd: xff, upstreamTimeout: 200 * time.Millisecond})
	rs := s.exchange(t, req("GET /u", "Connection: close"))
	wantProblem(t, rs, 504, "the upstream service did not answer in time")
	if got := s.outcomes(); !slices.Equal(got, []fastproxy.Outcome{fastproxy.UpstreamTimeout}) {
		t.Errorf("outcomes %v", got)
	}
}

// TestSlowBody: a body that does not arrive within the body timeout is
// answered 408 and its connection closed.
func TestSlowBody(t *testing.T) {
	up := newUpstream(t, nil)
	s := startStand(t, mustURL(t, up.URL), standOptions{fwd: xff, bodyTimeout: 300 * time.Millisecond})
	for _, send := range []string{
		req("POST /u", "Content-Length: 100000") + "half of it",
		req("POST /u", "Transfer-Encoding: chunked") + "a\r\nhalf of it\r\n",
	} {
		c := dial(t, s)
		_, _ = c.Write([]byte(send)) // and never the rest
		wantProblem(t, readReplies(t, bufioReader(c)), 408, "the request body did not arrive within the body timeout")
	}
	if got := s.outcomes(); !slices.Equal(got, []fastproxy.Outcome{fastproxy.CallerTimeout, fastproxy.CallerTimeout}) {
		t.Errorf("outcomes %v", got)
	}
}

// TestMalformedBody: a chunked body broken after its first chunk: 400.
func TestMalformedBody(t *testing.T) {
	up := newUpstream(t, nil)
	s := startStand(t, mustURL(t, up.URL), standOptions{fwd: xff})
	rs := s.exchange(t, req("POST /u", "Transfer-Encoding: chunked")+"3\r\nabc\r\nzz\r\n")
	wantProblem(t, rs, 400, "the request body is malformed")
	if got := s.outcomes(); !slices.Equal(got, []fastproxy.Outcome{fastproxy.CallerMalformed}) {
		t.Errorf("outcomes %v", got)
	}
}

func wantProblem(t *testing.T, rs []reply, status int, detail string) {
	t.Helper()
	if len(rs) != 1 || rs[0].status != status {
		t.Fatalf("got %v, want one %d", statuses(rs), status)
	}
	if ct := rs[0].header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q", ct)
	}
	var p struct {
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal([]byte(rs[0].body), &p); err != nil || p.Status != status || p.Detail != detail {
		t.Errorf("body %q (%v), want status %d detail %q", rs[0].body, err, status, detail)
	}
}

// TestCallerAbortMidBody: a caller that goes away mid-body is an abort,
// not the upstream's failure, and nothing is answered.
func TestCallerAbortMidBody(t *testing.T) {
	arrived := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer up.Close()
	s := startStand(t, mustURL(t, up.URL), standOptions{fwd: xff})
	c := dial(t, s)
	// More than the upstream client's write buffer, so that the request
	// reaches the upstream while its body is still arriving.
	_, _ = c.Write([]byte(req("POST /u", "Content-Length: 100000") + strings.Repeat("x", 10000)))
	<-arrived
	c.Close()
	deadline := time.Now().Add(10 * time.Second) // an upper bound only
	for len(s.outcomes()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := s.outcomes(); !slices.Equal(got, []fastproxy.Outcome{fastproxy.CallerAborted}) {
		t.Errorf("outcomes %v, want CallerAborted", got)
	}
}
