package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/gateway"
)

// tickClock is a fake clock that reports the interval of every ticker made
// on made: a request held for its turn makes one.
type tickClock struct {
	*clock.Fake
	made chan time.Duration
}

func (c *tickClock) NewTicker(d time.Duration) clock.Ticker {
	t := c.Fake.NewTicker(d)
	c.made <- d
	return t
}

// queueGateway is a gateway whose one rule is a queue: leaky_bucket 10/s,
// burst 1, delay 2s, per caller IP, in front of an upstream that notes,
// on the gateway's clock, when each request reaches it.
type queueGateway struct {
	clock    *tickClock
	url      string
	adminURL string
	client   *http.Client
	arrived  chan time.Time
	mu       sync.Mutex
	arrivals []time.Time
	stop     context.CancelFunc // starts the shutdown
	unclean  bool               // Run may return the drain's error
}

func startQueueGateway(t *testing.T) *queueGateway {
	t.Helper()
	return startQueueGatewayWith(t, "")
}

// startQueueGatewayWith is startQueueGateway with more configuration
// (a server block).
func startQueueGatewayWith(t *testing.T, more string) *queueGateway {
	t.Helper()
	q := &queueGateway{clock: &tickClock{Fake: clock.NewFake(start), made: make(chan time.Duration, 256)},
		arrived: make(chan time.Time, 256)}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		now := q.clock.Now()
		q.mu.Lock()
		q.arrivals = append(q.arrivals, now)
		q.mu.Unlock()
		q.arrived <- now
		_, _ = io.WriteString(w, "stored")
	}))
	t.Cleanup(up.Close)
	file, err := config.Parse("sluice.yaml", []byte(fmt.Sprintf(`listen: 127.0.0.1:18080
upstream: %s
admin: 127.0.0.1:18090
rules:
  - name: uploads
    match: { path: /uploads }
    key: ip
    algorithm: leaky_bucket
    rate: 10/s
    burst: 1
    delay: 2s
%s`, up.URL, more)))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Options{Config: file, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Clock: q.clock})
	if err != nil {
		t.Fatal(err)
	}
	for len(q.clock.made) > 0 { // the gateway's own tickers (the store's sweeper)
		<-q.clock.made
	}
	ln, adm := listen(t), listen(t)
	q.url, q.adminURL = "http://"+ln.Addr().String(), "http://"+adm.Addr().String()
	q.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	q.stop = cancel
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, ln, adm) }()
	select { // Run's own ticker (its once-a-second look at shedding)
	case d := <-q.clock.made:
		if d != time.Second {
			t.Fatalf("Run made a ticker of %v, want its 1s one", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run made no ticker")
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !q.unclean {
			t.Errorf("Run: %v", err)
		}
		q.client.CloseIdleConnections()
		if err := g.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return q
}

// burst sends n requests at once; their answers arrive on the channel.
func (q *queueGateway) burst(t *testing.T, n int) chan *http.Response {
	out := make(chan *http.Response, n)
	for range n {
		go func() {
			resp, err := q.client.Post(q.url+"/uploads", "text/plain", strings.NewReader("doc"))
			if err != nil {
				t.Errorf("POST: %v", err)
				out <- nil
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			out <- resp
		}()
	}
	return out
}

// held waits until n requests are held, and returns their waits.
func (q *queueGateway) held(t *testing.T, n int) map[time.Duration]bool {
	t.Helper()
	waits := map[time.Duration]bool{}
	for range n {
		select {
		case d := <-q.clock.made:
			waits[d] = true
		case <-time.After(20 * time.Second): // an upper bound only
			t.Fatalf("%d of %d requests held", len(waits), n)
		}
	}
	return waits
}

func (q *queueGateway) waitArrivals(t *testing.T, n int) {
	t.Helper()
	receiveN(t, q.arrived, n, 20*time.Second, "a request did not reach the upstream")
}

// TestDelayLevelsABurst: leaky_bucket 10/s delay 2s (burst 1) through the
// gateway on real sockets. A burst of 15 at once: all pass, reaching the
// upstream one every 100ms on the gateway's clock (the fake clock: the
// spacing is exact, no timing is measured). A burst of 40 into the empty
// queue: 21 pass (one at once, 20 within the 2s queue), the other 19 get
// 429 with Retry-After at once.
func TestDelayLevelsABurst(t *testing.T) {
	q := startQueueGateway(t)
	answers := q.burst(t, 15)
	q.waitArrivals(t, 1) // the bucket's one at once
	waits := q.held(t, 14)
	for i := 1; i <= 14; i++ {
		if !waits[time.Duration(i)*100*time.Millisecond] {
			t.Fatalf("held requests wait %v, want 100ms, 200ms, ... 1.4s", waits)
		}
	}
	for range 14 {
		q.clock.Advance(100 * time.Millisecond)
		q.waitArrivals(t, 1)
	}
	for range 15 {
		if resp := <-answers; resp == nil || resp.StatusCode != 200 || resp.Header.Get("RateLimit") == "" {
			t.Fatalf("a request of the burst of 15: %v", resp)
		}
	}
	q.mu.Lock()
	for i, at := range q.arrivals {
		if want := start.Add(time.Duration(i) * 100 * time.Millisecond); !at.Equal(want) {
			t.Errorf("request %d reached the upstream at %v, want %v", i, at.Sub(start), want.Sub(start))
		}
	}
	q.mu.Unlock()
	text := q.metricsText(t)
	if held, delayed := metric(text, "sluice_delay_seconds_count"), metric(text, "sluice_requests_total", "decision=delayed"); held != 14 || delayed != 14 {
		t.Errorf("metrics: %v held requests timed, %v delayed decisions; want 14 and 14", held, delayed)
	}
	if sum := metric(text, "sluice_delay_seconds_sum"); sum < 10.49 || sum > 10.51 { // 0.1+0.2+...+1.4 on the gateway's clock
		t.Errorf("sluice_delay_seconds_sum %v, want 10.5", sum)
	}

	q.clock.Advance(2 * time.Second) // the queue has drained
	answers = q.burst(t, 40)
	q.waitArrivals(t, 1)
	q.held(t, 20)
	refused, passed := 0, 0
	for refused < 19 { // before any turn came: the one at once, and the refusals
		switch resp := <-answers; {
		case resp != nil && resp.StatusCode == 200 && passed == 0:
			passed++
		case resp == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1":
			t.Fatalf("before any turn came, an answer other than 429 with Retry-After 1: %v", resp)
		default:
			refused++
		}
	}
	for range 20 {
		q.clock.Advance(100 * time.Millisecond)
		q.waitArrivals(t, 1)
	}
	for passed < 21 {
		if resp := <-answers; resp == nil || resp.StatusCode != 200 {
			t.Fatalf("a held request of the burst of 40: %v", resp)
		}
		passed++
	}
}

// metricsText returns the gateway's metrics.
func (q *queueGateway) metricsText(t *testing.T) string {
	t.Helper()
	resp, err := q.client.Get(q.adminURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// delayed returns how many requests the gateway has reported delayed,
// from its metrics.
func (q *queueGateway) delayed(t *testing.T) float64 {
	t.Helper()
	return max(metric(q.metricsText(t), "sluice_requests_total", "decision=delayed"), 0)
}

// TestDelayCallerHangsUp: a caller that closes its connection while its
// request (raw, without a body) is held never reaches the upstream, and
// gives its turn back: the next request takes it, 100ms, not 200ms behind.
// The gone request is reported (delayed, its turn given back) once its
// reservation is back, which the test waits for.
func TestDelayCallerHangsUp(t *testing.T) {
	q := startQueueGateway(t)
	if resp := <-q.burst(t, 1); resp == nil || resp.StatusCode != 200 {
		t.Fatalf("first request: %v", resp)
	}
	q.waitArrivals(t, 1)
	conn, err := net.Dial("tcp", strings.TrimPrefix(q.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(conn, "GET /uploads HTTP/1.1\r\nHost: sluice.test\r\n\r\n")
	if w := q.held(t, 1); !w[100*time.Millisecond] {
		t.Fatalf("the raw request waits %v, want 100ms", w)
	}
	conn.Close()
	deadline := time.Now().Add(20 * time.Second) // an upper bound only
	for q.delayed(t) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the hung-up request was never reported")
		}
		time.Sleep(10 * time.Millisecond)
	}
	next := q.burst(t, 1)
	if w := q.held(t, 1); !w[100*time.Millisecond] {
		t.Fatalf("after the hang-up the next request waits %v, want 100ms (the turn given back)", w)
	}
	q.clock.Advance(100 * time.Millisecond)
	q.waitArrivals(t, 1)
	if resp := <-next; resp == nil || resp.StatusCode != 200 {
		t.Fatalf("next: %v", resp)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.arrivals) != 2 {
		t.Errorf("the upstream saw %d requests, want 2 (the hung-up one never)", len(q.arrivals))
	}
}

// TestDrainAnswersHeldRequest503: a request held for its turn when
// server.drain_timeout ends gets 503 problem+json with a Retry-After, as a
// request waiting in protect's queue does, and its turn is given back; not
// an empty 200 (the drain's cut is no caller leaving).
func TestDrainAnswersHeldRequest503(t *testing.T) {
	q := startQueueGatewayWith(t, "server: {drain_timeout: 200ms}\n")
	if resp := <-q.burst(t, 1); resp == nil || resp.StatusCode != 200 {
		t.Fatalf("first request: %v", resp)
	}
	q.waitArrivals(t, 1)
	c, err := net.Dial("tcp", strings.TrimPrefix(q.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	held := &rawConn{t: t, c: c, br: bufio.NewReader(c)}
	held.write("GET /uploads HTTP/1.1\r\nHost: sluice.test\r\n\r\n")
	if w := q.held(t, 1); !w[100*time.Millisecond] {
		t.Fatalf("the request waits %v, want 100ms", w)
	}
	q.unclean = true
	q.stop()
	if resp := held.mustRead(http.StatusServiceUnavailable); resp.Header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q, want 1 (the 100ms left of its wait, rounded up)", resp.Header.Get("Retry-After"))
	}
}
