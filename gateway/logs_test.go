package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLogsLimitedOncePerSecond: a flood of limited requests from one
// client logs "client limited" once per clock second, as JSON, with the
// client id and never the access key.
func TestLogsLimitedOncePerSecond(t *testing.T) {
	h := startGateway(t, lowerLimit) // claims: 2/m
	h.get("/claims/1", keyA)
	h.get("/claims/1", keyA)
	statuses := h.flood(500, func(int) string { return keyA })
	if statuses[http.StatusTooManyRequests] != 500 {
		t.Fatalf("statuses %v, want 500 x 429", statuses)
	}
	if n := h.logs.count(t, "client limited"); n != 1 {
		t.Errorf(`"client limited" logged %d times for 500 limited requests in one clock second, want 1`, n)
	}
	h.clock.Advance(999 * time.Millisecond)
	h.get("/claims/1", keyA)
	if n := h.logs.count(t, "client limited"); n != 1 {
		t.Errorf(`"client limited" logged %d times within the same second, want 1`, n)
	}
	h.clock.Advance(time.Millisecond)
	for range 10 {
		h.get("/claims/1", keyA)
	}
	if n := h.logs.count(t, "client limited"); n != 2 {
		t.Errorf(`"client limited" logged %d times after the clock's next second, want 2`, n)
	}
	// Another client has its own allowance of log lines.
	h.writeConfig(strings.Replace(lowerLimit, "large: { claims: 1000/m }", "large: { claims: 1/m }", 1))
	if r := h.admin(http.MethodPost, "/reload"); r.Status != http.StatusOK {
		t.Fatalf("reload: %d %s", r.Status, r.Body)
	}
	h.get("/claims/1", keyB)
	h.get("/claims/1", keyB)
	var clients []string
	for _, l := range h.logs.lines(t) {
		if l["msg"] == "client limited" {
			c, _ := l["client"].(string)
			clients = append(clients, c)
			if _, ok := l["rules"]; !ok {
				t.Errorf("log line without rules: %v", l)
			}
		}
	}
	if strings.Join(clients, ",") != "partner-a,partner-a,partner-b" {
		t.Errorf(`"client limited" lines for %v, want partner-a twice then partner-b`, clients)
	}
	if logs := h.logs.String(); strings.Contains(logs, keyA) || strings.Contains(logs, keyB) {
		t.Error("an access key appears in the logs")
	}
}

// TestLogsUnknownCallersAndUpstream: unknown callers and an unreachable
// upstream are logged once per second, never with the key.
func TestLogsUnknownCallersAndUpstream(t *testing.T) {
	ln := listen(t)
	closed := "http://" + ln.Addr().String()
	ln.Close()
	h := startGateway(t, strings.Replace(standardConfig, "upstream: {{UPSTREAM}}", "upstream: "+closed, 1))
	keys := make([]string, 50)
	for i := range keys {
		keys[i] = randomKey()
		h.get("/claims/1", keys[i])
		h.get("/claims/1", keyA)
	}
	if n := h.logs.count(t, "unknown callers rejected"); n != 1 {
		t.Errorf(`"unknown callers rejected" logged %d times, want 1`, n)
	}
	if n := h.logs.count(t, "upstream unreachable"); n != 1 {
		t.Errorf(`"upstream unreachable" logged %d times, want 1`, n)
	}
	logs := h.logs.String()
	for _, k := range append(keys, keyA) {
		if strings.Contains(logs, k) {
			t.Fatalf("access key %q appears in the logs", k)
		}
	}
}

// TestReloadLogs: a reload logs what changed (the top-level fields, the
// rules by name) and the configuration's version as the overview shows
// it, and sets the last-successful-reload metric (set at start too); a
// refused reload logs one JSON line per problem with its line and column,
// as a refused start does.
func TestReloadLogs(t *testing.T) {
	h := startGateway(t, standardConfig)
	const last = "sluice_config_last_reload_success_timestamp_seconds"
	if got := metric(h.metrics(), last); got != float64(start.Unix()) {
		t.Errorf("%s at start = %v, want %d", last, got, start.Unix())
	}
	h.clock.Advance(10 * time.Second)
	h.writeConfig("legacy_headers: true\n" + lowerLimit)
	if r := h.admin(http.MethodPost, "/reload"); r.Status != http.StatusOK {
		t.Fatalf("reload: %d %s", r.Status, r.Body)
	}
	ov, _ := h.overview()
	version := ov["instance"].(map[string]any)["version"]
	var line map[string]any
	for _, l := range h.logs.lines(t) {
		if l["msg"] == "configuration reloaded" {
			line = l
		}
	}
	want := map[string]string{"changed": "[legacy_headers rules]", "rules_changed": "[claims]", "rules_added": "[]", "rules_removed": "[]",
		"config_version": fmt.Sprint(version)}
	for field, w := range want {
		if got := fmt.Sprint(line[field]); got != w {
			t.Errorf("reloaded: %s = %s, want %s (line %v)", field, got, w, line)
		}
	}
	if line["previous_version"] == nil || line["previous_version"] == line["config_version"] {
		t.Errorf("reloaded: previous_version %v beside config_version %v", line["previous_version"], line["config_version"])
	}
	if got := metric(h.metrics(), last); got != float64(start.Unix()+10) {
		t.Errorf("%s after a reload = %v, want %d", last, got, start.Unix()+10)
	}

	h.clock.Advance(10 * time.Second)
	broken := strings.Replace(lowerLimit, "rate: 2/m", "rate: 2 per minute", 1)
	broken = strings.Replace(broken, "mode: shadow", "mode: shadowy", 1)
	h.writeConfig(broken)
	if r := h.admin(http.MethodPost, "/reload"); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("reload of a broken file: %d %s", r.Status, r.Body)
	}
	var refused []map[string]any
	for _, l := range h.logs.lines(t) {
		if l["msg"] == "reload refused; previous configuration stays" {
			refused = append(refused, l)
		}
	}
	if len(refused) != 2 {
		t.Fatalf("refused reload logged %d lines, want 2 (one per problem): %v", len(refused), refused)
	}
	for _, l := range refused {
		msg, _ := l["err"].(string)
		if l["file"] != h.path || l["line"] == nil || l["col"] == nil || strings.Contains(msg, "\n") || strings.Contains(msg, h.path) {
			t.Errorf("refused reload line %v, want file, line, col and the problem alone", l)
		}
	}
	if got := metric(h.metrics(), last); got != float64(start.Unix()+10) {
		t.Errorf("%s after a refused reload = %v, want %d (the last success)", last, got, start.Unix()+10)
	}
}

// TestUnknownKeySignal: with unknown: anonymous, a request whose key is no
// listed client's is counted as anonymous, and gets X-Sluice-Key: unknown;
// it is counted in sluice_unknown_keys_total and logged at most once a
// second, never with the key.
func TestUnknownKeySignal(t *testing.T) {
	h := startGateway(t, keysConfig)
	const typo = "mistyped-key-7f3a9c"
	r := h.get("/claims/1", typo)
	if r.Status != http.StatusOK || r.Header.Get("X-Sluice-Key") != "unknown" || h.up.lastSeen(t).Header.Get("X-Sluice-Client") != "anonymous" {
		t.Errorf("a mistyped key: %d, X-Sluice-Key %q, want 200 and unknown, counted as anonymous", r.Status, r.Header.Get("X-Sluice-Key"))
	}
	for _, key := range []string{keyA, ""} {
		if got := h.get("/claims/1", key).Header.Get("X-Sluice-Key"); got != "" {
			t.Errorf("key %q: X-Sluice-Key %q, want none", key, got)
		}
	}
	for range 20 {
		h.get("/claims/1", typo)
	}
	if got := metric(h.metrics(), "sluice_unknown_keys_total"); got != 21 {
		t.Errorf("sluice_unknown_keys_total = %v, want 21", got)
	}
	if n := h.logs.count(t, "unknown access key; counted as anonymous"); n != 1 {
		t.Errorf("logged %d times in one clock second, want 1", n)
	}
	h.clock.Advance(time.Second)
	h.get("/claims/1", typo)
	if n := h.logs.count(t, "unknown access key; counted as anonymous"); n != 2 {
		t.Errorf("logged %d times after the next second, want 2", n)
	}
	if strings.Contains(h.logs.String(), typo) {
		t.Error("the mistyped key appears in the logs")
	}
}
