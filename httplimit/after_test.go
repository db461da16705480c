package httplimit_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/httplimit"
)

// seenResponse is a copy of one OnResponse call.
type seenResponse struct {
	httplimit.Response
	retryAfter, cost string
}

// afterServer serves handler behind a Limiter for p on a real socket and
// returns the responses OnResponse saw, one per request.
func afterServer(t *testing.T, handler http.HandlerFunc) (*httptest.Server, *harness, <-chan seenResponse) {
	t.Helper()
	seen := make(chan seenResponse, 16)
	h := newHarness(t, byIP(2), func(o *httplimit.Options) {
		o.OnResponse = func(_ *http.Request, resp *httplimit.Response) {
			seen <- seenResponse{Response: *resp, retryAfter: resp.Header.Get("Retry-After"), cost: resp.Header.Get("X-Usage-Tokens")}
		}
	})
	srv := httptest.NewServer(h.lim.Handler(handler))
	t.Cleanup(srv.Close)
	return srv, h, seen
}

func next(t *testing.T, seen <-chan seenResponse) seenResponse {
	t.Helper()
	select {
	case r := <-seen:
		r.Header = nil // valid only during the call
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("OnResponse was not called")
		return seenResponse{}
	}
}

func TestOnResponseSeesTheAnswer(t *testing.T) {
	var h *harness
	srv, h, seen := afterServer(t, func(w http.ResponseWriter, r *http.Request) {
		h.clock.Advance(3 * time.Second)
		w.Header().Set("Retry-After", "7")
		w.Header().Set("X-Usage-Tokens", "42")
		w.WriteHeader(http.StatusServiceUnavailable)
		h.clock.Advance(2 * time.Second) // the body, as slowly as the caller reads it
		_, _ = w.Write([]byte("busy"))
	})
	resp, err := http.Get(srv.URL + "/claims")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	got := next(t, seen)
	want := seenResponse{Response: httplimit.Response{Passed: true, Status: 503, Latency: 5 * time.Second, FirstByte: 3 * time.Second}, retryAfter: "7", cost: "42"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("OnResponse saw %+v, want %+v", got, want)
	}
}

func TestOnResponseOfARefusal(t *testing.T) {
	srv, _, seen := afterServer(t, func(http.ResponseWriter, *http.Request) {})
	for range 3 {
		resp, err := http.Get(srv.URL + "/claims")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	statuses := []int{next(t, seen).Status, next(t, seen).Status}
	got := next(t, seen)
	if statuses[0] != 200 || statuses[1] != 200 || got.Passed || got.Status != http.StatusTooManyRequests || got.retryAfter == "" {
		t.Errorf("passed %v then %+v, want 200 200 then a refusal: 429 with its Retry-After, not passed", statuses, got)
	}
}

func TestOnResponseStatusWrittenOrNot(t *testing.T) {
	srv, _, seen := afterServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hints" {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusNotFound)
		}
	})
	for _, tc := range []struct {
		path string
		want int
	}{{"/nothing", 200}, {"/hints", 404}} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if got := next(t, seen); got.Status != tc.want {
			t.Errorf("%s: OnResponse saw status %d, want %d", tc.path, got.Status, tc.want)
		}
	}
}

// A reverse proxy whose upstream breaks off mid-body panics with
// http.ErrAbortHandler: the steps after the response still run, and the
// panic goes on to net/http (the connection is cut).
func TestOnResponseAfterAbortPanic(t *testing.T) {
	srv, _, seen := afterServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("part"))
		panic(http.ErrAbortHandler)
	})
	resp, err := http.Get(srv.URL + "/claims")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
	}
	if err == nil {
		t.Error("the response was not cut")
	}
	if got := next(t, seen); !got.Aborted || got.Status != 200 || !got.Passed {
		t.Errorf("OnResponse saw %+v, want passed, 200, aborted", got)
	}
}

func TestOnResponseCallerGone(t *testing.T) {
	entered := make(chan struct{})
	srv, _, seen := afterServer(t, func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
	})
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(conn, "GET /claims HTTP/1.1\r\nHost: x\r\n\r\n")
	<-entered
	_ = conn.Close()
	if got := next(t, seen); !got.Aborted {
		t.Errorf("OnResponse saw %+v, want aborted", got)
	}
}

func TestNoteFailure(t *testing.T) {
	srv, _, seen := afterServer(t, func(w http.ResponseWriter, r *http.Request) {
		httplimit.NoteFailure(struct{ http.ResponseWriter }{w}, httplimit.UpstreamFailed) // not found: no Unwrap
		httplimit.NoteFailure(unwrapper{w}, httplimit.UpstreamTimeout)
		w.WriteHeader(http.StatusGatewayTimeout)
	})
	resp, err := http.Get(srv.URL + "/claims")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got := next(t, seen); got.Failure != httplimit.UpstreamTimeout || got.Status != 504 {
		t.Errorf("OnResponse saw %+v, want 504 and UpstreamTimeout", got)
	}
	httplimit.NoteFailure(httptest.NewRecorder(), httplimit.UpstreamFailed) // no Limiter: nothing happens
}

type unwrapper struct{ http.ResponseWriter }

func (u unwrapper) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// The handler behind a recording Limiter keeps what the server's writer
// offers: Flusher, ReaderFrom, Hijacker, and ResponseController's methods
// through Unwrap.
func TestRecorderKeepsWriterAbilities(t *testing.T) {
	srv, _, seen := afterServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, flusher := w.(http.Flusher)
		_, readerFrom := w.(io.ReaderFrom)
		deadline := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Minute))
		if !flusher || !readerFrom || deadline != nil {
			http.Error(w, "lost", http.StatusInternalServerError)
			return
		}
		conn, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = brw.WriteString("HTTP/1.1 299 Hijacked\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		_ = brw.Flush()
		_ = conn.Close()
	})
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET /claims HTTP/1.1\r\nHost: x\r\n\r\n")
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 299") {
		t.Fatalf("status line %q (%v), want the hijacker's 299", line, err)
	}
	if got := next(t, seen); got.Status != http.StatusSwitchingProtocols {
		t.Errorf("OnResponse saw status %d for a hijacked connection, want 101", got.Status)
	}
}

// Flush and ReadFrom reach the client.
func TestRecorderFlushAndReadFrom(t *testing.T) {
	srv, _, seen := afterServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.(io.ReaderFrom).ReadFrom(strings.NewReader("body"))
		w.(http.Flusher).Flush()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/claims", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(body) != "body" {
		t.Errorf("body %q, want %q", body, "body")
	}
	if got := next(t, seen); got.Status != 200 {
		t.Errorf("OnResponse saw status %d, want 200", got.Status)
	}
}
