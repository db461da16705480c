package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// signalServer is a stand-in for an outside measure (a grid's carbon
// intensity): it answers every GET with the status and body it is given,
// or holds the request until the caller gives up (hang).
type signalServer struct {
	srv    *httptest.Server
	hits   atomic.Int64
	mu     sync.Mutex
	status int
	body   string
	hang   bool
}

func newSignalServer(t *testing.T, body string) *signalServer {
	t.Helper()
	s := &signalServer{status: http.StatusOK, body: body}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		status, body, hang := s.status, s.body, s.hang
		s.mu.Unlock()
		if hang {
			<-r.Context().Done() // the gateway's timeout ends it
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// answer makes s answer status and body from now on.
func (s *signalServer) answer(status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.body, s.hang = status, body, false
}

// hangUp makes s hold every request until its caller gives up.
func (s *signalServer) hangUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hang = true
}

// signalConfig protects with one signal read from url every 10s (timeout
// 300ms), above 400, and classifies: /exports degrades, /reports is low,
// /claims is counted and normal, /health critical.
func signalConfig(name, url, above string) string {
	return `listen: 127.0.0.1:18080
upstream: {{UPSTREAM}}
admin: 127.0.0.1:18090
protect:
  signals:
    - name: ` + name + `
      url: ` + url + `
      every: 10s
      timeout: 300ms
      above: ` + above + `
rules:
  - name: exports
    match: { path: /exports }
    degrade: true
  - name: reports
    match: { path: /reports }
    priority: low
  - name: claims
    match: { path: /claims }
    rate: 1000/m
  - name: health
    match: { path: /health }
    priority: critical
`
}

const every = 10 * time.Second

// startSignalled serves a gateway for cfg and waits for its first read of
// signal name (at start).
func startSignalled(t *testing.T, cfg, name string) *harness {
	t.Helper()
	h := startGateway(t, cfg)
	eventually(t, "the first read of "+name, func() bool {
		v := h.signalView(name)
		return v != nil && (v["read"] != "" || v["error"] != "")
	})
	return h
}

// signalView is the overview's entry for signal name, nil if none.
func (h *harness) signalView(name string) map[string]any {
	h.t.Helper()
	ov, _ := h.overview()
	list, _ := ov["signals"].([]any)
	for _, s := range list {
		if s := s.(map[string]any); s["name"] == name {
			return s
		}
	}
	return nil
}

// pollSignal moves the clock on by one interval and waits until signal
// name has been read again (a value read now, or one more error); it
// returns the overview's entry then.
func (h *harness) pollSignal(name string) map[string]any {
	h.t.Helper()
	errs := metric(h.metrics(), "sluice_signal_errors_total", "signal="+name)
	h.clock.Advance(every)
	now := h.clock.Now().UTC().Format(time.RFC3339)
	eventually(h.t, "signal "+name+" read again", func() bool {
		return h.signalView(name)["read"] == now || metric(h.metrics(), "sluice_signal_errors_total", "signal="+name) > errs
	})
	return h.signalView(name)
}

// classes checks what each class of request gets: want is the problem's
// reason for exports, reports, claims and health ("" for a pass).
func (h *harness) classes(phase string, want [4]string) {
	h.t.Helper()
	for i, path := range []string{"/exports", "/reports", "/claims/1", "/health"} {
		r := h.get(path, "")
		var body struct {
			Reason string `json:"reason"`
			Detail string `json:"detail"`
		}
		if r.Status != http.StatusOK {
			_ = json.Unmarshal([]byte(r.Body), &body)
		}
		switch {
		case want[i] == "" && r.Status != http.StatusOK:
			h.t.Errorf("%s: %s: %d %s, want it passed", phase, path, r.Status, r.Body)
		case want[i] != "" && (r.Status != http.StatusServiceUnavailable || body.Reason != want[i] ||
			r.Header.Get("Retry-After") == "" || !strings.Contains(body.Detail, "while the service is degraded (signal:")):
			h.t.Errorf("%s: %s: %d Retry-After %q %s, want 503 %s naming the signal", phase, path, r.Status,
				r.Header.Get("Retry-After"), r.Body, want[i])
		}
	}
}

var (
	degrading = [4]string{"degraded", "shed", "", ""}
	serving   = [4]string{}
)

// A signal above its line degrades: the degrade rule's requests are
// refused 503 degraded, the low ones 503 shed, normal and critical ones
// pass; the overview, the metrics and the log say so. Back below, all
// pass again.
func TestSignalDegrades(t *testing.T) {
	sig := newSignalServer(t, "450")
	h := startSignalled(t, signalConfig("grid-carbon", sig.srv.URL+"/carbon", "400"), "grid-carbon")
	h.classes("above", degrading)
	v := h.signalView("grid-carbon")
	if v["value"] != 450.0 || v["above"] != 400.0 || v["on"] != true || v["stale"] != false || v["error"] != "" ||
		v["read"] != start.UTC().Format(time.RFC3339) {
		t.Errorf("overview signal %v, want 450 above 400, on, read at start", v)
	}
	ov, _ := h.overview()
	if d := ov["degraded"].(map[string]any); d["on"] != true || !slices.Equal(toStrings(d["sources"]), []string{"signal:grid-carbon"}) {
		t.Errorf("overview degraded %v, want on for signal:grid-carbon", d)
	}
	m := h.metrics()
	if metric(m, "sluice_signal_value", "signal=grid-carbon") != 450 || metric(m, "sluice_signal_above", "signal=grid-carbon") != 1 ||
		metric(m, "sluice_signal_stale", "signal=grid-carbon") != 0 || metric(m, "sluice_signal_errors_total", "signal=grid-carbon") != 0 {
		t.Errorf("signal series: %s", grepLines(m, "sluice_signal_"))
	}
	if metric(m, "sluice_shed_total", "priority=normal", "reason=degraded") != 1 || metric(m, "sluice_shed_total", "priority=low", "reason=shed") != 1 {
		t.Errorf("sluice_shed_total: %s; want one degraded (normal), one shed (low)", grepLines(m, "sluice_shed_total"))
	}
	if h.logs.count(t, "signal above its line: degrade rules and low-priority requests are refused") != 1 {
		t.Errorf("no log line of the signal going above:\n%s", h.logs)
	}

	sig.answer(http.StatusOK, "380")
	if v := h.pollSignal("grid-carbon"); v["value"] != 380.0 || v["on"] != false {
		t.Errorf("overview signal %v, want 380, off", v)
	}
	h.classes("below", serving)
	ov, _ = h.overview()
	if d := ov["degraded"].(map[string]any); d["on"] != false || len(toStrings(d["sources"])) != 0 {
		t.Errorf("overview degraded %v, want off, no sources", d)
	}
	if metric(h.metrics(), "sluice_signal_above", "signal=grid-carbon") != 0 {
		t.Error("sluice_signal_above still 1 below the line")
	}
	if h.logs.count(t, "signal no longer above its line: degrading for it ends") != 1 {
		t.Errorf("no log line of the signal going below:\n%s", h.logs)
	}
}

// A signal that cannot be read keeps its last value for 3 intervals,
// saying why in the overview; at the third failed read (30s after the
// last good one) it is stale and counts as not above, and the metrics and
// the log say so. Read again, it degrades again.
func TestSignalUnreadable(t *testing.T) {
	sig := newSignalServer(t, "450")
	h := startSignalled(t, signalConfig("grid-carbon", sig.srv.URL, "400"), "grid-carbon")
	sig.answer(http.StatusInternalServerError, `{"error":"down"}`)
	for i := 1; i <= 2; i++ {
		v := h.pollSignal("grid-carbon")
		if v["value"] != 450.0 || v["on"] != true || v["stale"] != false || v["error"] != "answered 500, not 200" {
			t.Errorf("failed read %d: %v, want 450 kept, on, not stale, the status named", i, v)
		}
		h.classes("kept", degrading)
	}
	v := h.pollSignal("grid-carbon")
	if v["value"] != 450.0 || v["on"] != false || v["stale"] != true || v["read"] != start.UTC().Format(time.RFC3339) {
		t.Errorf("third failed read: %v, want stale, off, the last value and when it was read", v)
	}
	h.classes("stale", serving)
	m := h.metrics()
	if metric(m, "sluice_signal_stale", "signal=grid-carbon") != 1 || metric(m, "sluice_signal_above", "signal=grid-carbon") != 0 ||
		metric(m, "sluice_signal_errors_total", "signal=grid-carbon") != 3 {
		t.Errorf("signal series when stale: %s", grepLines(m, "sluice_signal_"))
	}
	for _, line := range []string{"signal read failed; its last value is kept for 3 intervals",
		"signal stale: unreadable for 3 intervals, it counts as not above its line"} {
		if h.logs.count(t, line) != 1 {
			t.Errorf("want one log line %q:\n%s", line, h.logs)
		}
	}
	sig.answer(http.StatusOK, "455")
	if v := h.pollSignal("grid-carbon"); v["on"] != true || v["stale"] != false || v["error"] != "" || v["value"] != 455.0 {
		t.Errorf("read again: %v, want 455, on", v)
	}
	h.classes("read again", degrading)
	if h.logs.count(t, "signal read again") != 1 {
		t.Errorf("no log line of the signal read again:\n%s", h.logs)
	}
}

// What a signal may answer: a JSON number or {"value": N} (other fields
// ignored), up to 64 KiB; anything else is a failed read that keeps the
// value before it and says why.
func TestSignalAnswers(t *testing.T) {
	sig := newSignalServer(t, "100")
	h := startSignalled(t, signalConfig("grid-carbon", sig.srv.URL, "400"), "grid-carbon")
	padded := "450" + strings.Repeat(" ", 64<<10-3)
	for _, tc := range []struct {
		name  string
		body  string
		hang  bool
		value float64 // after the read
		err   string  // contained in the error; "" for a good read
	}{
		{"object", `{"value": 410, "zone": "DE"}`, false, 410, ""},
		{"number with spaces", " \n420\t", false, 420, ""},
		{"exactly 64 KiB", padded, false, 450, ""},
		{"negative fraction", "-0.5e1", false, -5, ""},
		{"garbage", "high", false, -5, `not a JSON number nor {"value": N}`},
		{"null", "null", false, -5, "not a JSON number"},
		{"value as a string", `{"value": "450"}`, false, -5, "not a JSON number"},
		{"value missing", `{"intensity": 450}`, false, -5, "not a JSON number"},
		{"two numbers", "450 460", false, -5, "not a JSON number"},
		{"beyond float64", "1e400", false, -5, "not a JSON number"},
		{"over 64 KiB", padded + " ", false, -5, "the answer is over 64 KiB"},
		{"no answer", "", true, -5, "no answer within its timeout (300ms)"},
		{"read again", "401", false, 401, ""},
	} {
		if tc.hang {
			sig.hangUp()
		} else {
			sig.answer(http.StatusOK, tc.body)
		}
		v := h.pollSignal("grid-carbon")
		errText, _ := v["error"].(string)
		if v["value"] != tc.value || (tc.err == "") != (errText == "") || !strings.Contains(errText, tc.err) {
			t.Errorf("%s: value %v error %q, want %v and an error with %q", tc.name, v["value"], errText, tc.value, tc.err)
		}
		if tc.err != "" {
			sig.answer(http.StatusOK, "-5") // a good read between failures: none goes stale
			h.pollSignal("grid-carbon")
		}
	}
}

// A signal whose server refuses connections from the start has no value
// and counts as not above; 30s on it is stale.
func TestSignalNeverRead(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	url := gone.URL
	gone.Close()
	h := startSignalled(t, signalConfig("grid-carbon", url, "400"), "grid-carbon")
	v := h.signalView("grid-carbon")
	if errText, _ := v["error"].(string); v["value"] != nil || v["read"] != "" || v["on"] != false || v["stale"] != false ||
		!strings.Contains(errText, "refused") || strings.Contains(errText, url) {
		t.Errorf("never read: %v, want no value, not on, the refusal named (without the URL)", v)
	}
	h.classes("never read", serving)
	h.pollSignal("grid-carbon")
	h.pollSignal("grid-carbon")
	if v := h.pollSignal("grid-carbon"); v["stale"] != true {
		t.Errorf("30s unread: %v, want stale", v)
	}
	if metric(h.metrics(), "sluice_signal_value", "signal=grid-carbon") != -1 {
		t.Error("sluice_signal_value reported before any value was read")
	}
}

// Reload puts a new list of signals in force: the same list changes
// nothing (no new read); another line for the same signal keeps its value
// and decides on it at once; a signal removed goes off, its series and
// overview entry with it; a new one is read at once. After Run no
// goroutine is left.
func TestSignalReload(t *testing.T) {
	t.Cleanup(func() { // registered first: runs once the gateway has stopped
		goleak.VerifyNone(t, append(fasthttpLingering(), goleak.IgnoreCurrent())...)
	})
	high, low := newSignalServer(t, "450"), newSignalServer(t, "100")
	h := startSignalled(t, signalConfig("grid-carbon", high.srv.URL, "400"), "grid-carbon")
	h.classes("a above", degrading)

	hits := high.hits.Load()
	h.writeConfig(signalConfig("grid-carbon", high.srv.URL, "400"))
	if err := h.g.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := high.hits.Load(); got != hits {
		t.Errorf("an unchanged list was read again on reload (%d reads, want %d)", got, hits)
	}
	h.classes("unchanged", degrading)

	h.writeConfig(signalConfig("grid-carbon", high.srv.URL, "500"))
	if err := h.g.Reload(); err != nil {
		t.Fatal(err)
	}
	if v := h.signalView("grid-carbon"); v["value"] != 450.0 || v["above"] != 500.0 || v["on"] != false {
		t.Errorf("line raised to 500: %v, want 450 kept, off at once", v)
	}
	h.classes("line raised", serving)

	h.writeConfig(signalConfig("queue-depth", low.srv.URL, "50"))
	if err := h.g.Reload(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "queue-depth read", func() bool { return h.signalView("queue-depth")["value"] == 100.0 })
	if h.signalView("grid-carbon") != nil {
		t.Error("grid-carbon still in the overview once removed")
	}
	m := h.metrics()
	if metric(m, "sluice_signal_above", "signal=grid-carbon") != -1 || metric(m, "sluice_signal_above", "signal=queue-depth") != 1 {
		t.Errorf("signal series after reload: %s", grepLines(m, "sluice_signal_"))
	}
	ov, _ := h.overview()
	if d := ov["degraded"].(map[string]any); !slices.Equal(toStrings(d["sources"]), []string{"signal:queue-depth"}) {
		t.Errorf("degraded %v, want signal:queue-depth alone", d)
	}
	h.classes("queue-depth above", degrading)
}

// toStrings reads a JSON list of strings.
func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// grepLines is the lines of text that start with prefix, for a message.
func grepLines(text, prefix string) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, prefix) {
			b.WriteString(line)
		}
	}
	return b.String()
}
