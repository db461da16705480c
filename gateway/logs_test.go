package gateway_test

import (
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
