package gateway_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// accessConfig limits partner-a to 2 requests a minute on /claims and
// logs every request to access.log beside the file; {{ACCESS}} is the
// access_log block's further fields.
const accessConfig = `listen: 127.0.0.1:18080
upstream: {{UPSTREAM}}
admin: 127.0.0.1:18090
clients:
  key_header: X-API-Key
  unknown: reject
  list:
    - id: partner-a
      keys: [` + keyA + `]
rules:
  - name: claims
    match: { path: /claims }
    algorithm: fixed_window
    rate: 2/m
access_log: {path: access.log{{ACCESS}}}
`

// madeID is the form of a request id sluice makes.
var madeID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// accessLines stops h (which writes the last lines) and parses its
// access log, each line as one JSON object.
func accessLines(t *testing.T, h *harness) []map[string]any {
	t.Helper()
	h.stop()
	f, err := os.Open(filepath.Join(h.dir, "access.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("access log line is not JSON: %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func startAccess(t *testing.T, more string) *harness {
	return startGateway(t, strings.ReplaceAll(accessConfig, "{{ACCESS}}", more))
}

// TestAccessLog: one line per request, passed and refused, with the
// request id its caller got back, the client named by its id (never its
// key), the path without its query, the rules and what limited it; the
// lines in the buffer are written when the gateway stops.
func TestAccessLog(t *testing.T) {
	h := startAccess(t, "")
	var ids []string
	for i := range 4 {
		key := keyA
		if i == 3 {
			key = ""
		}
		r := h.get("/claims/7?token=query-secret-value", key)
		ids = append(ids, r.Header.Get("X-Request-Id"))
		if want := []int{200, 200, 429, 401}[i]; r.Status != want {
			t.Fatalf("request %d: status %d, want %d: %s", i, r.Status, want, r.Body)
		}
	}
	lines := accessLines(t, h)
	data, _ := os.ReadFile(filepath.Join(h.dir, "access.log"))
	for _, secret := range []string{keyA, "query-secret-value", "token"} {
		if strings.Contains(string(data), secret) {
			t.Errorf("the access log holds %q:\n%s", secret, data)
		}
	}
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(lines), data)
	}
	for i, l := range lines {
		want := map[string]any{"request_id": ids[i], "method": "GET", "path": "/claims/7", "address": "127.0.0.1",
			"status": []float64{200, 200, 429, 401}[i], "decision": []string{"passed", "passed", "limited", "unauthenticated"}[i],
			"client": []string{"partner-a", "partner-a", "partner-a", "unknown"}[i]}
		for k, v := range want {
			if l[k] != v {
				t.Errorf("line %d: %s = %v, want %v (%v)", i, k, l[k], v, l)
			}
		}
		if !madeID.MatchString(ids[i]) {
			t.Errorf("answer %d: X-Request-Id %q, want 32 hex digits", i, ids[i])
		}
		if _, ok := l["total_ms"].(float64); !ok {
			t.Errorf("line %d: no total_ms: %v", i, l)
		}
		if ts, _ := l["time"].(string); !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(ts) {
			t.Errorf("line %d: time %q, want RFC 3339 in milliseconds", i, ts)
		}
	}
	if lines[0]["upstream"] != "default" {
		t.Errorf("passed line: upstream %v, want default", lines[0]["upstream"])
	}
	if _, ok := lines[2]["upstream"]; ok {
		t.Errorf("refused line: upstream: %v", lines[2])
	}
	if _, ok := lines[0]["upstream_ms"].(float64); !ok {
		t.Errorf("passed line: no upstream_ms: %v", lines[0])
	}
	if _, ok := lines[2]["upstream_ms"]; ok {
		t.Errorf("refused line: upstream_ms: %v", lines[2])
	}
	if got := lines[2]["rules"]; !equalList(got, "claims") {
		t.Errorf("429 line: rules %v, want [claims]", got)
	}
	if got := lines[2]["limited_by"]; !equalList(got, "claims") {
		t.Errorf("429 line: limited_by %v, want [claims]", got)
	}
	if _, ok := lines[0]["limited_by"]; ok {
		t.Errorf("passed line: limited_by: %v", lines[0])
	}
	if n := lines[0]["bytes_out"]; n != float64(len("upstream ok /claims/7")) {
		t.Errorf("passed line: bytes_out %v, want %d", n, len("upstream ok /claims/7"))
	}
}

func equalList(got any, want ...string) bool {
	l, ok := got.([]any)
	if !ok || len(l) != len(want) {
		return false
	}
	for i := range l {
		if l[i] != want[i] {
			return false
		}
	}
	return true
}

// TestAccessLogSample: with sample 0 only the refused requests are logged.
func TestAccessLogSample(t *testing.T) {
	h := startAccess(t, ", sample: 0")
	for range 3 {
		h.get("/claims", keyA)
	}
	h.get("/claims", "")
	var got []string
	for _, l := range accessLines(t, h) {
		got = append(got, l["decision"].(string))
	}
	if want := []string{"limited", "unauthenticated"}; !slices.Equal(got, want) {
		t.Errorf("logged %v, want %v", got, want)
	}
}

// TestRequestIDRaw: on raw request lines, an X-Request-Id sent twice (in
// two spellings of its name), or empty, is replaced by one new id: the
// upstream sees exactly one line of it, the caller gets the same back.
func TestRequestIDRaw(t *testing.T) {
	h := startGateway(t, strings.ReplaceAll(accessConfig, "access_log: {path: access.log{{ACCESS}}}\n", ""))
	for _, lines := range []string{
		"X-Request-Id: a\r\nx-request-id: b\r\n",
		"X-Request-Id: a\r\nX-Request-Id: a\r\n",
		"X-Request-Id: \r\n",
		"X-REQUEST-ID: \r\nX-Request-Id: c\r\n",
	} {
		c := h.dial()
		c.write("GET /other HTTP/1.1\r\nHost: x\r\nX-API-Key: " + keyA + "\r\n" + lines + "\r\n")
		resp := c.mustRead(http.StatusOK)
		got := resp.Header.Values("X-Request-Id")
		if len(got) != 1 || !madeID.MatchString(got[0]) {
			t.Errorf("%q: X-Request-Id %q came back, want one new id", lines, got)
			continue
		}
		if ids := h.up.lastSeen(t).Header.Values("X-Request-Id"); len(ids) != 1 || ids[0] != got[0] {
			t.Errorf("%q: the upstream got X-Request-Id %q, want only %q", lines, ids, got[0])
		}
	}
}

// TestRequestID: a caller's sane X-Request-Id goes on and comes back, one
// that is not is replaced, none gets a new one, also on sluice's own
// 429; traceparent and tracestate go on unchanged.
func TestRequestID(t *testing.T) {
	h := startGateway(t, strings.ReplaceAll(accessConfig, "access_log: {path: access.log{{ACCESS}}}\n", ""))
	const tp, ts = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
	for _, tc := range []struct{ name, sent string }{
		{"kept", "req-42.abc_DEF:x"}, {"with a space", "two words"}, {"too long", strings.Repeat("a", 129)},
		{"none", ""}, {"not ASCII", "réq"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{"X-API-Key": keyA, "Traceparent": tp, "Tracestate": ts}
			if tc.sent != "" {
				hdr["X-Request-Id"] = tc.sent
			}
			r := h.do(h.url, http.MethodGet, "/other", hdr, "")
			got := r.Header.Get("X-Request-Id")
			switch {
			case tc.name == "kept" && got != tc.sent:
				t.Errorf("X-Request-Id %q came back, want the caller's %q", got, tc.sent)
			case tc.name != "kept" && !madeID.MatchString(got):
				t.Errorf("X-Request-Id %q came back, want a new one of 32 hex digits", got)
			}
			seen := h.up.lastSeen(t)
			if ids := seen.Header.Values("X-Request-Id"); len(ids) != 1 || ids[0] != got {
				t.Errorf("the upstream got X-Request-Id %q, want %q", ids, got)
			}
			if seen.Header.Get("Traceparent") != tp || seen.Header.Get("Tracestate") != ts {
				t.Errorf("the upstream got traceparent %q, tracestate %q; want them unchanged",
					seen.Header.Get("Traceparent"), seen.Header.Get("Tracestate"))
			}
		})
	}
	for range 2 {
		h.get("/claims", keyA)
	}
	r := h.do(h.url, http.MethodGet, "/claims", map[string]string{"X-API-Key": keyA, "X-Request-Id": "mine-429"}, "")
	if r.Status != http.StatusTooManyRequests || r.Header.Get("X-Request-Id") != "mine-429" {
		t.Errorf("429: status %d, X-Request-Id %q; want 429 with the caller's id", r.Status, r.Header.Get("X-Request-Id"))
	}
	if r := h.get("/claims", ""); r.Status != http.StatusUnauthorized || !madeID.MatchString(r.Header.Get("X-Request-Id")) {
		t.Errorf("401: status %d, X-Request-Id %q; want 401 with a new id", r.Status, r.Header.Get("X-Request-Id"))
	}
}

// stuckWriter blocks every Write until released: an access log's file on
// a disk that does not keep up.
type stuckWriter struct {
	release chan struct{}
	entered chan struct{}
	once    sync.Once
	mu      sync.Mutex
	n       int
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.entered) })
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n += strings.Count(string(p), "\n")
	return len(p), nil
}

// TestAccessLogFull: while the writer is stuck, requests are still
// answered at once, and the lines that find the buffer full are dropped
// and counted; the rest are written once it moves on.
func TestAccessLogFull(t *testing.T) {
	h := newHarness(t)
	w := &stuckWriter{release: make(chan struct{}), entered: make(chan struct{})}
	h.accessLog = w
	h.writeConfig(strings.ReplaceAll(accessConfig, "{{ACCESS}}", ", buffer: 1"))
	h.serve()
	var release sync.Once
	unstick := func() { release.Do(func() { close(w.release) }) }
	t.Cleanup(unstick) // before the harness stops, if the test ends early
	h.get("/other", keyA)
	<-w.entered // the writer holds the first line
	const more = 5
	for range more {
		if r := h.get("/other", keyA); r.Status != http.StatusOK {
			t.Fatalf("status %d while the access log is stuck", r.Status)
		}
	}
	dropped := metric(h.metrics(), "sluice_access_log_dropped_total")
	if dropped != more-1 {
		t.Errorf("sluice_access_log_dropped_total %v, want %d (one line waits in the buffer)", dropped, more-1)
	}
	unstick()
	h.stop()
	if w.n != 2 {
		t.Errorf("%d lines written, want 2 (the one held and the one buffered)", w.n)
	}
}

// TestAccessLogUpgrade: an upgrade is logged as it switches, 101 and
// passed, and its 101 carries the request id the upstream got.
func TestAccessLogUpgrade(t *testing.T) {
	up := newEchoUpstream(t)
	ln, adm := listen(t), listen(t)
	file := filepath.Join(t.TempDir(), "access.log")
	runGatewayOn(t, ln, adm, strings.Replace(standardConfig, "{{UPSTREAM}}", up.srv.URL, 1)+"access_log: {path: "+file+"}\n")
	r, resp := upgraded(t, ln.Addr().String())
	id := resp.Header.Get("X-Request-Id")
	var line string
	eventually(t, "the upgrade's line", func() bool {
		b, _ := os.ReadFile(file)
		line = string(b)
		return strings.HasSuffix(line, "\n")
	})
	var l map[string]any
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if l["status"] != float64(101) || l["decision"] != "passed" || l["client"] != "partner-a" || l["path"] != "/claims/1" {
		t.Errorf("the upgrade's line: %v", l)
	}
	if got := (<-up.seen).Get("X-Request-Id"); got == "" || got != l["request_id"] || id != got {
		t.Errorf("request ids: line %v, upstream %q, 101 %q", l["request_id"], got, id)
	}
	r.c.Close()
}
