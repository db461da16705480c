package fastproxy_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-rl/sluice/internal/fastproxy"
)

// TestAnswerBodiesKeepConnection: answers of every size around the one up
// to which a body is read whole before the answer goes out (4 KiB), with
// a known length and chunked, reach the caller intact, and every request
// goes on the one kept-alive upstream connection: a body read whole gives
// its connection back as a streamed one does.
func TestAnswerBodiesKeepConnection(t *testing.T) {
	var mu sync.Mutex
	peers := map[string]bool{}
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		peers[r.RemoteAddr] = true
		mu.Unlock()
		size, _ := strconv.Atoi(r.URL.Query().Get("size"))
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", strconv.Itoa(size))
		}
		_, _ = io.WriteString(w, strings.Repeat("b", size))
	})
	s := startStand(t, mustURL(t, up.URL), standOptions{fwd: xff})
	sizes := []int{0, 1, 4095, 4096, 4097, 70000}
	var raw strings.Builder
	for _, chunked := range []string{"", "1"} {
		for _, n := range sizes {
			raw.WriteString("GET /a?size=" + strconv.Itoa(n) + "&chunked=" + chunked + " HTTP/1.1\r\nHost: x\r\n\r\n")
		}
	}
	rs := s.exchange(t, raw.String())
	if len(rs) != 2*len(sizes) {
		t.Fatalf("%d answers, want %d", len(rs), 2*len(sizes))
	}
	for i, r := range rs {
		if n := sizes[i%len(sizes)]; r.status != 200 || r.body != strings.Repeat("b", n) {
			t.Errorf("answer %d: %d with %d bytes, want 200 with %d", i, r.status, len(r.body), n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(peers) != 1 {
		t.Errorf("the upstream saw %d connections, want 1 kept alive", len(peers))
	}
}

// TestSmallBodyBrokenOff: an upstream that breaks off a small body of
// known length: the caller's connection closes without a whole answer (a
// streamed body that breaks off does the same), and the gateway is told
// why, in Serve's done.
func TestSmallBodyBrokenOff(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, "only ten..")
		w.(http.Flusher).Flush()
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			c.Close()
		}
	})
	s := startStand(t, mustURL(t, up.URL), standOptions{fwd: xff})
	failed := make(chan error, 1)
	s.mu.Lock()
	s.done = func(err error) { failed <- err }
	s.mu.Unlock()
	c := dial(t, s)
	if _, err := io.WriteString(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(bufioReader(c), nil); err == nil {
		body, err := io.ReadAll(resp.Body)
		if err == nil {
			t.Errorf("a whole answer: %d %q", resp.StatusCode, body)
		}
	}
	if err := <-failed; err == nil {
		t.Error("done told nil")
	}
	if got := s.outcomes(); len(got) != 1 || got[0] != fastproxy.Answered {
		t.Errorf("outcomes %v, want [Answered]", got)
	}
}
