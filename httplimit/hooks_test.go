package httplimit_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store/memory"
)

// byUser counts rule per-ip by the X-User header's value when there is
// one, and by address (the rule's own key) otherwise.
func byUser(r *http.Request, rule string) (string, bool) {
	u := r.Header.Get("X-User")
	return u, u != ""
}

// A key function counts a rule by any key of the request: one user from
// two addresses is one count, two users from one address two; without a
// key the rule's own key counts.
func TestKeyFunc(t *testing.T) {
	h := newHarness(t, byIP(1), func(o *httplimit.Options) { o.Key = byUser })
	user := func(name, remote string) req {
		return req{remote: remote, header: http.Header{"X-User": {name}}}
	}
	wantStatus(t, h.do(user("ann", "192.0.2.1:1")), http.StatusOK, "ann's first request")
	wantStatus(t, h.do(user("ann", "192.0.2.2:1")), http.StatusTooManyRequests, "ann from another address")
	wantStatus(t, h.do(user("bob", "192.0.2.1:1")), http.StatusOK, "bob from ann's address")
	wantStatus(t, h.do(req{remote: "192.0.2.1:1"}), http.StatusOK, "no user: counted by address")
	wantStatus(t, h.do(req{remote: "192.0.2.1:1"}), http.StatusTooManyRequests, "no user again, same address")
}

// Keys made by the key function live apart from the rule's own keys and
// from each other however they are spelled: a user named as an address is
// not that address, JoinKey's parts never run together, and a long key
// is stored hashed.
func TestKeyFuncKeysApart(t *testing.T) {
	var key string
	h := newHarness(t, byIP(100), func(o *httplimit.Options) {
		o.Key = func(r *http.Request, rule string) (string, bool) { return key, key != "" }
	})
	keys := map[string]string{}
	for _, k := range []string{"", "192.0.2.1", httplimit.JoinKey("a:b", "c"), httplimit.JoinKey("a", "b:c"), strings.Repeat("x", 10_000)} {
		key = k
		sk := h.keyOf(req{remote: "192.0.2.1:1"})
		if prev, dup := keys[sk]; dup {
			t.Errorf("key %.20q and key %.20q are stored alike: %q", prev, k, sk)
		}
		keys[sk] = k
		if len(sk) > 300 {
			t.Errorf("key of %d bytes stored as %d bytes", len(k), len(sk))
		}
	}
	if httplimit.JoinKey() != "" {
		t.Error("JoinKey() is not empty")
	}
}

// The key function counts concurrency rules too: a user's requests in
// flight, from any address.
func TestKeyFuncConcurrency(t *testing.T) {
	leases := memory.New(memory.Options{Clock: clock.NewFake(epoch)})
	t.Cleanup(func() { _ = leases.Close() })
	h := newHarness(t, policy.Policy{Rules: []policy.Rule{{Name: "inflight", Key: policy.KeySpec{Kind: policy.KeyIP}, Concurrency: 1}}},
		func(o *httplimit.Options) { o.Key, o.Leaser = byUser, leases })
	release := make(chan struct{})
	entered := make(chan struct{})
	handler := h.lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	}))
	first := httptest.NewRequest("GET", "/", nil)
	first.RemoteAddr, first.Header["X-User"] = "192.0.2.1:1", []string{"ann"}
	done := make(chan struct{})
	go func() { defer close(done); handler.ServeHTTP(httptest.NewRecorder(), first) }()
	<-entered
	wantStatus(t, h.do(req{remote: "192.0.2.2:1", header: http.Header{"X-User": {"ann"}}}), http.StatusTooManyRequests, "ann's second request in flight")
	wantStatus(t, h.do(req{remote: "192.0.2.1:1", header: http.Header{"X-User": {"bob"}}}), http.StatusOK, "bob's, from ann's address")
	close(release)
	<-done
}

// Skipped requests reach the handler undecided and uncounted, without
// RateLimit headers or a report; a skipped request limits nothing.
func TestSkip(t *testing.T) {
	h := newHarness(t, byIP(1), func(o *httplimit.Options) {
		o.Skip = func(r *http.Request) bool { return r.URL.Path == "/healthz" }
	})
	for range 3 {
		w := h.do(req{path: "/healthz"})
		wantStatus(t, w, http.StatusOK, "health check")
		if w.Header().Get("RateLimit") != "" {
			t.Errorf("a skipped request has RateLimit %q", w.Header().Get("RateLimit"))
		}
	}
	if calls, _ := h.store.stats(); calls != 0 || h.reportCount() != 0 {
		t.Errorf("skipped requests: %d store calls, %d reports; want none", calls, h.reportCount())
	}
	wantStatus(t, h.do(req{}), http.StatusOK, "the first decided request")
	wantStatus(t, h.do(req{}), http.StatusTooManyRequests, "the second")
}

// A skipped request still loses a caller's X-Sluice-Client and override
// headers in every spelling: sent by hand on a real socket, as no client
// library would spell them.
func TestSkipScrubsOnTheWire(t *testing.T) {
	h := newHarness(t, byIP(1), func(o *httplimit.Options) { o.Skip = func(*http.Request) bool { return true } })
	seen := make(chan http.Header, 1)
	srv := httptest.NewServer(h.lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen <- r.Header.Clone() })))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET /claims HTTP/1.1\r\nHost: sluice.test\r\nX-Sluice-Client: partner-a\r\nx_sluice_client: partner-a\r\n"+
		"X-HTTP-Method-Override: DELETE\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	got := <-seen
	for name := range got {
		if policy.RemovedHeader(name) {
			t.Errorf("the handler received %s: %q", name, got[name])
		}
	}
}

// Reject writes the refusal: its own status and body, over the RateLimit
// headers and Retry-After the Limiter set; OnResponse sees its status.
func TestReject(t *testing.T) {
	var refused httplimit.Refusal
	var answered []int
	h := newHarness(t, partners(), func(o *httplimit.Options) {
		o.Reject = func(w http.ResponseWriter, r *http.Request, ref *httplimit.Refusal) {
			refused = *ref
			refused.Problem = append([]byte(nil), ref.Problem...)
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusTeapot)
			fmt.Fprintf(w, "slow down, %s", ref.Report.Client)
		}
		o.OnResponse = func(r *http.Request, resp *httplimit.Response) { answered = append(answered, resp.Status) }
	})
	for range 3 {
		wantStatus(t, h.get("/claims", "key-a"), http.StatusOK, "within the limit")
	}
	w := h.get("/claims", "key-a")
	if w.Code != http.StatusTeapot || w.Body.String() != "slow down, partner-a" || w.Header().Get("Content-Type") != "text/plain" {
		t.Errorf("refusal: %d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body.String())
	}
	if w.Header().Get("Retry-After") == "" || w.Header().Get("RateLimit") == "" || w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("the Limiter's fields are gone: %v", w.Header())
	}
	if refused.Status != http.StatusTooManyRequests || refused.RetryAfter <= 0 || !strings.Contains(string(refused.Problem), "partner-a exceeded") {
		t.Errorf("Refusal %+v", refused)
	}
	if answered[len(answered)-1] != http.StatusTeapot {
		t.Errorf("OnResponse saw %v", answered)
	}
	wantStatus(t, h.get("/claims", "no-such-key"), http.StatusTeapot, "unknown key, by Reject")
	if refused.Status != http.StatusUnauthorized {
		t.Errorf("unknown key: Refusal.Status %d, want 401", refused.Status)
	}
}

// A Reject that writes nothing answers the Limiter's status, empty.
func TestRejectWritingNothing(t *testing.T) {
	h := newHarness(t, byIP(1), func(o *httplimit.Options) {
		o.Reject = func(http.ResponseWriter, *http.Request, *httplimit.Refusal) {}
	})
	wantStatus(t, h.do(req{}), http.StatusOK, "first")
	w := h.do(req{})
	if w.Code != http.StatusTooManyRequests || w.Body.Len() != 0 || w.Header().Get("Retry-After") == "" {
		t.Errorf("%d %v %q", w.Code, w.Header(), w.Body.String())
	}
}
