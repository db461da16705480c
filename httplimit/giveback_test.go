package httplimit_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
	"github.com/sluice-rl/sluice/throttle"
)

// TestPanicsGiveEverythingBack: whatever panics once a request holds a
// throttle slot, a concurrency lease and a reservation to settle (the
// handler, the program's OnDecision, its OnSettle or its OnResponse), the
// slot and the lease are given back and the panic goes on: the next
// request passes. Before, a panic in OnDecision (after the throttle had
// admitted the request) or in a step after the response (OnSettle) left
// the slot taken for good, one fewer for every later request.
func TestPanicsGiveEverythingBack(t *testing.T) {
	for _, where := range []string{"handler", "OnDecision", "OnSettle", "OnResponse"} {
		t.Run(where, func(t *testing.T) {
			thr, err := throttle.New(throttle.Config{MaxInFlight: 1})
			if err != nil {
				t.Fatal(err)
			}
			var armed atomic.Bool
			boom := func(at string) {
				if at == where && armed.Load() {
					panic("boom in " + at)
				}
			}
			rules := []policy.Rule{
				{Name: "tokens", Key: policy.KeySpec{Kind: policy.KeyGlobal}, Algorithm: limiter.TokenBucket,
					Rate: rate(100, time.Hour), CostHeader: "X-Cost"},
				{Name: "one", Key: policy.KeySpec{Kind: policy.KeyGlobal}, Concurrency: 1},
			}
			mem := memory.New(memory.Options{Clock: clock.NewFake(epoch)})
			defer mem.Close()
			h := newHarness(t, policy.Policy{Rules: rules}, func(o *httplimit.Options) {
				o.Store, o.Leaser = mem, mem
				o.Throttle = thr
				o.OnDecision = func(*http.Request, *httplimit.Report) { boom("OnDecision") }
				o.OnSettle = func(*http.Request, string, error) { boom("OnSettle") } // no X-Cost: always called
				o.OnResponse = func(*http.Request, *httplimit.Response) { boom("OnResponse") }
			})
			handler := h.lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				boom("handler")
				w.WriteHeader(http.StatusOK)
			}))
			armed.Store(true)
			func() {
				defer func() {
					if p := recover(); p == nil {
						t.Error("the panic did not go on")
					}
				}()
				handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
			}()
			armed.Store(false)
			if st := thr.Stats(); st.InFlight != 0 {
				t.Errorf("in flight after the panic: %d, want 0", st.InFlight)
			}
			w := httptest.NewRecorder()
			handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
			wantStatus(t, w, http.StatusOK, "the next request")
		})
	}
}

// giveBackServer serves, behind a Limiter with a throttle of one slot
// (queue 10), a rule counting failures ("tries", 10 an hour for all), a
// concurrency rule of 1 per X-Who, and a rule making /low low priority:
// /ok 200, /fail 401, /block 200 once released, /hang nothing until its
// caller leaves, /panic a panic before any status, /hijack a 101 on the
// hijacked connection.
type giveBackServer struct {
	srv     *httptest.Server
	thr     *throttle.Throttle
	entered chan string
	release chan struct{}
	settled atomic.Int32 // requests whose after steps have all run (OnResponse)
}

func newGiveBackServer(t *testing.T) *giveBackServer {
	thr, err := throttle.New(throttle.Config{MaxInFlight: 1, Queue: throttle.Queue{MaxLength: 10, MaxWait: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.New(memory.Options{Clock: clock.NewFake(epoch)})
	t.Cleanup(func() { _ = mem.Close() })
	rules := []policy.Rule{
		{Name: "tries", Key: policy.KeySpec{Kind: policy.KeyGlobal}, Algorithm: limiter.TokenBucket, Rate: rate(10, time.Hour),
			Count: policy.CountFailures},
		{Name: "one", Key: policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Who"}, Concurrency: 1},
		{Name: "low", Match: policy.Match{Path: "/low"}, Priority: new(throttle.Low)},
	}
	g := &giveBackServer{thr: thr, entered: make(chan string, 4), release: make(chan struct{})}
	lim, err := httplimit.New(httplimit.Options{Policy: compile(t, policy.Policy{Rules: rules}), Store: mem, Throttle: thr,
		OnResponse: func(*http.Request, *httplimit.Response) { g.settled.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	g.srv = httptest.NewServer(lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch path := strings.TrimPrefix(r.URL.Path, "/low"); path {
		case "/fail":
			w.WriteHeader(http.StatusUnauthorized)
		case "/block", "/hang":
			g.entered <- path
			if path == "/block" {
				<-g.release
			} else {
				<-r.Context().Done()
			}
		case "/panic":
			panic(http.ErrAbortHandler)
		case "/hijack":
			conn, brw, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n")
				_ = brw.Flush()
				_ = conn.Close()
			}
		}
	})))
	t.Cleanup(g.srv.Close)
	return g
}

// send writes a raw GET for path as who and returns the connection.
func (g *giveBackServer) send(t *testing.T, path, who string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", g.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\nX-Who: "+who+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return c
}

// status reads the answer on c.
func status(t *testing.T, c net.Conn) int {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second)) // an upper bound only
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0 // nothing answered (a panic, a hang-up)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestEveryTakeGivenBackOnce: on every outcome a request can have (passed
// and answered, refused by a later step, its caller gone while queued or
// at the handler, a panic, a hijacked connection) its throttle slot and
// concurrency lease are given back, and its reservation under a rule
// counting failures is refunded exactly when no failure was answered by
// the handler (a request the handler never answered keeps it): a probe
// afterwards passes, sees "tries" at what is left, and the throttle is
// empty.
func TestEveryTakeGivenBackOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		blocker string // who holds the one slot meanwhile ("" none): "me" also holds the lease
		path    string
		want    int // status seen (0: none)
		left    int64
	}{
		{"passed, success", "", "/ok", 200, 10},
		{"passed, failure", "", "/fail", 401, 9},
		{"refused by the concurrency rule", "me", "/fail", 429, 10},
		{"refused by the throttle (shed)", "other", "/low/fail", 503, 10},
		{"caller gone while queued", "other", "/fail", 0, 10},
		{"caller gone at the handler", "", "/hang", 0, 9},
		{"handler panics before answering", "", "/panic", 0, 9},
		{"hijacked", "", "/hijack", 101, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGiveBackServer(t)
			var blocked net.Conn
			if tc.blocker != "" {
				blocked = g.send(t, "/block", tc.blocker)
				<-g.entered
			}
			c := g.send(t, tc.path, "me")
			switch tc.name {
			case "caller gone while queued":
				until(t, "queued", func() bool { return g.thr.Stats().QueueLength == 1 })
				_ = c.Close()
				until(t, "left the queue", func() bool { return g.thr.Stats().QueueLength == 0 })
			case "caller gone at the handler":
				<-g.entered
				_ = c.Close()
			default:
				if got := status(t, c); got != tc.want {
					t.Fatalf("status %d, want %d", got, tc.want)
				}
			}
			if blocked != nil {
				close(g.release)
				if got := status(t, blocked); got != 200 {
					t.Fatalf("blocker: %d", got)
				}
			}
			sent := int32(1)
			if blocked != nil {
				sent++
			}
			until(t, "every request settled", func() bool { return g.settled.Load() == sent })
			if st := g.thr.Stats(); st.InFlight != 0 || st.QueueLength != 0 {
				t.Errorf("throttle: %d in flight, %d queued; want none", st.InFlight, st.QueueLength)
			}
			probe := g.send(t, "/ok", "me")
			_ = probe.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(probe), nil)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			want := `"tries";r=` + strconv.FormatInt(tc.left-1, 10) + ";"
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("RateLimit"), want) {
				t.Errorf("probe: %d %q, want 200 and %s... (the lease back, %d tries left before it)",
					resp.StatusCode, resp.Header.Get("RateLimit"), want, tc.left)
			}
		})
	}
}

// settleGate is a memory store whose Settle waits until it is let go: a
// store that is slow to settle (Redis near its timeout).
type settleGate struct {
	*memory.Store
	entered, release chan struct{}
}

func (s *settleGate) Settle(ctx context.Context, key store.Key, l limiter.Limit, now time.Time, r limiter.Reservation, reserved, actual int64) (limiter.Decision, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.Store.Settle(ctx, key, l, now, r, reserved, actual)
}

// TestSlotBackBeforeTheStore: once the response is written the throttle
// slot is given back first, before the store is asked to settle the
// reservation (or release the leases): a store slow to answer must not
// keep the upstream's slots taken, which would queue and refuse requests
// for the store's slowness. Before, the slot came back last.
func TestSlotBackBeforeTheStore(t *testing.T) {
	thr, err := throttle.New(throttle.Config{MaxInFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.New(memory.Options{Clock: clock.NewFake(epoch)})
	defer mem.Close()
	st := &settleGate{Store: mem, entered: make(chan struct{}), release: make(chan struct{})}
	rules := []policy.Rule{{Name: "tries", Key: policy.KeySpec{Kind: policy.KeyGlobal}, Rate: rate(10, time.Hour), Count: policy.CountFailures}}
	lim, err := httplimit.New(httplimit.Options{Policy: compile(t, policy.Policy{Rules: rules}), Store: st, Throttle: thr})
	if err != nil {
		t.Fatal(err)
	}
	h := lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}()
	<-st.entered
	inFlight := thr.Stats().InFlight
	close(st.release)
	<-done
	if inFlight != 0 {
		t.Errorf("%d in flight while the store settles, want 0 (the slot given back first)", inFlight)
	}
}
