package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/gateway"
	"github.com/sluice-rl/sluice/internal/fastproxy"
	"github.com/sluice-rl/sluice/store"
)

// TestMain checks that no goroutine outlives the tests but those fasthttp
// leaves to end on their own (fastproxy.Lingering).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, fasthttpLingering()...)
}

func fasthttpLingering() []goleak.Option {
	var opts []goleak.Option
	for _, f := range fastproxy.Lingering {
		opts = append(opts, goleak.IgnoreAnyFunction(f))
	}
	return opts
}

// Access keys are long and distinctive, so that finding one in metrics or
// logs cannot be a coincidence.
const (
	keyA = "secret-key-partner-a-7f3c9e1d"
	keyB = "secret-key-partner-b-2b8a4f60"
)

// start is the fake clock's reading: 37 s into a minute, so a 1m fixed
// window resets in 23 s (the numbers of DESIGN.md "What a caller sees").
var start = time.Date(2025, 3, 14, 9, 26, 37, 0, time.UTC)

// standardConfig is the claims story: partner-a (100/m on GET /claims),
// partner-b (1000/m), a shadow rule on /reports and a rule on /submit for
// every method. {{UPSTREAM}} is replaced by the test upstream's URL.
const standardConfig = `listen: 127.0.0.1:18080
upstream: {{UPSTREAM}}
admin: 127.0.0.1:18090
clients:
  key_header: X-API-Key
  unknown: reject
  list:
    - id: partner-a
      keys: [` + keyA + `]
      plan: standard
    - id: partner-b
      keys: [` + keyB + `]
      plan: large
plans:
  standard: {}
  large: { claims: 1000/m }
rules:
  - name: claims
    match: { path: /claims, methods: [GET] }
    algorithm: fixed_window
    rate: 100/m
  - name: submit
    match: { path: /submit }
    algorithm: fixed_window
    rate: 100/m
  - name: reports
    match: { path: /reports }
    algorithm: fixed_window
    rate: 1/m
    mode: shadow
`

// seen is what the upstream received.
type seen struct {
	Method, Path, RawQuery, Body string
	Header                       http.Header
	RemoteAddr                   string
	RequestURI                   string // the request-target as it came
}

// upstream is a test service that counts and records what reaches it.
// Paths /upstream-429 and /upstream-503 answer as an overloaded service.
type upstream struct {
	srv  *httptest.Server
	hits atomic.Int64
	mu   sync.Mutex
	last []seen
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.hits.Add(1)
	u.mu.Lock()
	u.last = append(u.last, seen{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Body: string(body),
		Header: r.Header.Clone(), RemoteAddr: r.RemoteAddr, RequestURI: r.RequestURI})
	u.mu.Unlock()
	switch r.URL.Path {
	case "/upstream-429":
		w.Header().Set("Retry-After", "7")
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, "upstream says slow down\n")
	case "/upstream-503":
		w.Header().Set("Retry-After", "120")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"upstream":"overloaded"}`)
	default:
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "upstream ok "+r.URL.Path)
	}
}

// lastSeen returns the last request the upstream received.
func (u *upstream) lastSeen(t *testing.T) seen {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.last) == 0 {
		t.Fatal("the upstream received nothing")
	}
	return u.last[len(u.last)-1]
}

// syncBuffer is a log sink that tests may read while the gateway writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines parses every log line as JSON; a line that is not JSON fails t.
func (b *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// count returns how many log lines have msg.
func (b *syncBuffer) count(t *testing.T, msg string) int {
	t.Helper()
	n := 0
	for _, l := range b.lines(t) {
		if l["msg"] == msg {
			n++
		}
	}
	return n
}

// harness is one gateway served on real sockets, with its config file in a
// temp dir, a fake clock and its logs in a buffer.
type harness struct {
	t        *testing.T
	dir      string
	path     string
	clock    *clock.Fake
	up       *upstream
	g        *gateway.Gateway
	logs     *syncBuffer
	url      string // callers' side
	adminURL string
	client   *http.Client
	cancel   context.CancelFunc
	done     chan error
	store    store.Store // the gateway's store; nil: the one its config describes
	// realClock serves with the real clock, not clock: for what measures
	// time taken (latencies, the adaptive limit).
	realClock bool
	stopped   bool // stop has run since the last serve
	// prepare, if set, changes the loaded file before the gateway is made
	// from it (runtime overrides on its policy).
	prepare func(*config.File)
	// accessLog, if set, receives the access log in place of its path.
	accessLog io.Writer
}

// startGateway writes cfg ({{UPSTREAM}} filled in) and serves a gateway
// for it until the test ends.
func startGateway(t *testing.T, cfg string) *harness {
	t.Helper()
	h := newHarness(t)
	h.writeConfig(cfg)
	h.serve()
	return h
}

// newHarness prepares a harness (temp dir, upstream, clock, logs) without a
// gateway; serve starts one.
func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), clock: clock.NewFake(start), up: newUpstream(t), logs: &syncBuffer{}}
	h.path = filepath.Join(h.dir, "sluice.yaml")
	return h
}

// serve loads h.path and serves a gateway for it on new listeners until
// the test ends.
func (h *harness) serve() {
	t := h.t
	t.Helper()
	file, err := config.Load(h.path)
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	if h.prepare != nil {
		h.prepare(file)
	}
	var clk clock.Clock = h.clock
	if h.realClock {
		clk = clock.Real{}
	}
	h.g, err = gateway.New(gateway.Options{
		Config:    file,
		Logger:    slog.New(slog.NewJSONHandler(h.logs, nil)),
		Clock:     clk,
		Store:     h.store,
		AccessLog: h.accessLog,
	})
	if err != nil {
		t.Fatalf("gateway.New: %v", err)
	}
	ln, adm := listen(t), listen(t)
	h.url, h.adminURL = "http://"+ln.Addr().String(), "http://"+adm.Addr().String()
	h.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 10 * time.Second}
	var ctx context.Context
	ctx, h.cancel = context.WithCancel(context.Background())
	h.done = make(chan error, 1)
	h.stopped = false
	go func() { h.done <- h.g.Run(ctx, ln, adm) }()
	t.Cleanup(h.stop)
}

// stop ends Run, checks it returned nil and releases everything; once
// stopped, it does nothing until the next serve.
func (h *harness) stop() {
	if h.stopped {
		return
	}
	h.stopped = true
	h.cancel()
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("Run returned %v, want nil", err)
		}
	case <-time.After(15 * time.Second):
		h.t.Error("Run did not return after its context ended")
	}
	h.client.CloseIdleConnections()
	if err := h.g.Close(); err != nil {
		h.t.Errorf("Close: %v", err)
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// writeConfig replaces the config file the way editors do: write a temp
// file next to it, then rename it over the old one.
func (h *harness) writeConfig(cfg string) {
	h.t.Helper()
	cfg = strings.ReplaceAll(cfg, "{{UPSTREAM}}", h.up.srv.URL)
	tmp := h.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(cfg), 0o600); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp, h.path); err != nil {
		h.t.Fatal(err)
	}
}

// response is a response read to the end.
type response struct {
	Status int
	Header http.Header
	Body   string
}

// do sends a request to base+path with the given headers (nil for none)
// and body, and reads the whole response.
func (h *harness) do(base, method, path string, header map[string]string, body string) response {
	h.t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = nil, 0
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{resp.StatusCode, resp.Header, string(b)}
}

// get sends GET path to the callers' side with access key key ("" for none).
func (h *harness) get(path, key string) response {
	h.t.Helper()
	var hdr map[string]string
	if key != "" {
		hdr = map[string]string{"X-API-Key": key}
	}
	return h.do(h.url, http.MethodGet, path, hdr, "")
}

// admin sends method path to the admin side.
func (h *harness) admin(method, path string) response {
	h.t.Helper()
	return h.do(h.adminURL, method, path, nil, "")
}

// metrics returns the admin side's /metrics text.
func (h *harness) metrics() string {
	h.t.Helper()
	r := h.admin(http.MethodGet, "/metrics")
	if r.Status != http.StatusOK {
		h.t.Fatalf("GET /metrics: %d %s", r.Status, r.Body)
	}
	return r.Body
}

// metric returns the value of the series of name whose labels include
// labels ("k=v" pairs), summed over matches; -1 if there is none.
func metric(text, name string, labels ...string) float64 {
	sum, found := 0.0, false
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		series, value, ok := cutLast(line)
		if !ok || seriesName(series) != name || !hasLabels(series, labels) {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		sum, found = sum+v, true
	}
	if !found {
		return -1
	}
	return sum
}

func cutLast(line string) (string, string, bool) {
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return "", "", false
	}
	return line[:i], line[i+1:], true
}

func seriesName(series string) string {
	if i := strings.IndexByte(series, '{'); i >= 0 {
		return series[:i]
	}
	return series
}

func hasLabels(series string, labels []string) bool {
	for _, kv := range labels {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.Contains(series, k+`="`+v+`"`) {
			return false
		}
	}
	return true
}

// seriesCount counts the sample lines of metrics whose name starts with
// prefix.
func seriesCount(text, prefix string) int {
	n := 0
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, prefix) {
			n++
		}
	}
	return n
}

// receiveN takes n values from ch, failing with what if one takes longer
// than wait (an upper bound only).
func receiveN[T any](t *testing.T, ch <-chan T, n int, wait time.Duration, what string) {
	t.Helper()
	for range n {
		select {
		case <-ch:
		case <-time.After(wait):
			t.Fatal(what)
		}
	}
}

// eventually polls cond every 20ms for up to 5s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
