package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Slow uploads (issue 15, items 4 and 5): a caller sending its body slowly
// holds no slot of protect's, and its upload time is no latency of the
// upstream's.

// slowUpload is a request whose caller sends its head and the first part
// of its body, then waits to be told to send the rest.
type slowUpload struct {
	c  net.Conn
	br *bufio.Reader
}

// startUpload writes head and first on a new connection to h.
func startUpload(t *testing.T, h *harness, head, first string) *slowUpload {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, head+first); err != nil {
		t.Fatal(err)
	}
	return &slowUpload{c: c, br: bufio.NewReader(c)}
}

// finish writes rest and returns the status of the answer ("" on error).
func (u *slowUpload) finish(rest string) string {
	if _, err := io.WriteString(u.c, rest); err != nil {
		return err.Error()
	}
	return u.status()
}

func (u *slowUpload) status() string {
	resp, err := http.ReadResponse(u.br, nil)
	if err != nil {
		return err.Error()
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return fmt.Sprint(resp.StatusCode, " ", resp.Header.Get("Retry-After"))
}

// getAll sends n GETs of path one after the other and returns the statuses
// that were not 200.
func getAll(h *harness, path string, n int) []int {
	var bad []int
	for range n {
		if r := h.do(h.url, http.MethodGet, path, nil, ""); r.Status != http.StatusOK {
			bad = append(bad, r.Status)
		}
	}
	return bad
}

// nonNegative is a metric's value, 0 for a series that is not there (-1).
func nonNegative(v float64) float64 { return max(v, 0) }

// Four uploads dripping at max_in_flight 4 took every slot: normal
// requests got 503. A body of at most server.body_buffer is read before its
// request takes a slot, so the slow uploads hold buffers, no slots.
func TestSlowUploadsHoldNoSlot(t *testing.T) {
	h := startGateway(t, protectConfig("{{UPSTREAM}}", "protect:\n  max_in_flight: 4\n"))
	head := request("POST /other", "Content-Length: 10")
	var ups []*slowUpload
	for range 4 {
		ups = append(ups, startUpload(t, h, head, "a"))
	}
	eventually(t, "the four uploads hold a slot or a buffer of 10 bytes each", func() bool {
		m := h.metrics()
		return nonNegative(metric(m, "sluice_in_flight"))+nonNegative(metric(m, "sluice_body_buffer_bytes"))/10 >= 4
	})
	if bad := getAll(h, "/other", 20); len(bad) > 0 {
		t.Errorf("with four uploads dripping, %d of 20 GETs got %v, want 200", len(bad), bad)
	}
	if m := h.metrics(); metric(m, "sluice_in_flight") != 0 || metric(m, "sluice_body_buffer_bytes") != 40 {
		t.Errorf("in flight %v, body buffers %v bytes; want 0 and 40 (the uploads are read first)",
			metric(m, "sluice_in_flight"), metric(m, "sluice_body_buffer_bytes"))
	}
	for i, u := range ups {
		if got := u.finish("bcdefghij"); got != "200 " {
			t.Errorf("upload %d: %q, want 200", i, got)
		}
	}
	bodies := 0
	for _, r := range h.up.since(0) {
		if r.Method == http.MethodPost && r.Body == "abcdefghij" {
			bodies++
		}
	}
	if bodies != 4 {
		t.Errorf("the upstream received %d of the 4 uploads whole", bodies)
	}
	eventually(t, "the buffers are given back", func() bool { return metric(h.metrics(), "sluice_body_buffer_bytes") == 0 })
}

// A body larger than server.body_buffer streams to the upstream without a
// slot, among at most server.max_streamed_bodies at once: one more is
// answered 503 with Retry-After, and normal requests keep every slot.
func TestLargeUploadsStreamWithoutSlot(t *testing.T) {
	h := startGateway(t, protectConfig("{{UPSTREAM}}",
		"server: {body_buffer: 1024, max_streamed_bodies: 2}\nprotect:\n  max_in_flight: 2\n"))
	head := request("POST /other", "Content-Length: 2000")
	a, b := startUpload(t, h, head, "a"), startUpload(t, h, head, "b")
	eventually(t, "the two uploads hold a slot or stream", func() bool {
		m := h.metrics()
		return nonNegative(metric(m, "sluice_in_flight"))+nonNegative(metric(m, "sluice_streamed_bodies")) >= 2
	})
	if bad := getAll(h, "/other", 20); len(bad) > 0 {
		t.Errorf("with two large uploads dripping, %d of 20 GETs got %v, want 200", len(bad), bad)
	}
	if got := startUpload(t, h, head, "c").status(); got != "503 1" {
		t.Errorf("a third large upload: %q, want 503 with Retry-After: 1", got)
	}
	for name, u := range map[string]*slowUpload{"a": a, "b": b} {
		if got := u.finish(strings.Repeat("x", 1999)); got != "200 " {
			t.Errorf("upload %s: %q, want 200", name, got)
		}
	}
	eventually(t, "no body streams", func() bool { return metric(h.metrics(), "sluice_streamed_bodies") == 0 })
}

// A chunked body larger than server.body_buffer streams on with what was
// read of it first, in order, whole.
func TestLargeChunkedUploadArrivesWhole(t *testing.T) {
	h := startGateway(t, protectConfig("{{UPSTREAM}}", "server: {body_buffer: 16}\nprotect:\n  max_in_flight: 2\n"))
	body := strings.Repeat("0123456789", 10)
	var chunks strings.Builder
	for i := 0; i < len(body); i += 7 {
		part := body[i:min(i+7, len(body))]
		fmt.Fprintf(&chunks, "%x\r\n%s\r\n", len(part), part)
	}
	u := startUpload(t, h, request("POST /other", "Transfer-Encoding: chunked"), "")
	if got := u.finish(chunks.String() + "0\r\n\r\n"); got != "200 " {
		t.Fatalf("chunked upload: %q, want 200", got)
	}
	if got := h.up.lastSeen(t).Body; got != body {
		t.Errorf("the upstream received %q, want %q", got, body)
	}
}

// dripChunks sends a chunked body of three 1-byte chunks, gap apart, and
// returns the answer's status.
func dripChunks(t *testing.T, h *harness, gap time.Duration) string {
	u := startUpload(t, h, request("POST /other", "Transfer-Encoding: chunked"), "1\r\na\r\n")
	for _, c := range []string{"1\r\nb\r\n", "1\r\nc\r\n"} {
		time.Sleep(gap) // the caller's pace: what is measured, not synchronisation
		if _, err := io.WriteString(u.c, c); err != nil {
			return err.Error()
		}
	}
	time.Sleep(gap)
	return u.finish("0\r\n\r\n")
}

// upstreamSlow is how many answers sluice_upstream_seconds counted above
// 0.5s, and how many in all.
func upstreamSlow(m string) (slow, all float64) {
	all = metric(m, "sluice_upstream_seconds_count")
	return all - metric(m, "sluice_upstream_seconds_bucket", "le=0.5"), all
}

// sluice_upstream_seconds counted a caller's upload as the upstream's
// time: 1-2.5s for an upstream answering at once. It learns only the
// upstream's part, with and without protect; the adaptive limit then holds.
func TestSlowUploadIsNoUpstreamLatency(t *testing.T) {
	for _, tc := range []struct{ name, protect string }{
		{"streamed", ""},
		{"protect, adaptive", "protect:\n  max_in_flight: 40\n  adaptive: {latency_target: 100ms}\n"},
		{"protect, streamed without a slot", "server: {body_buffer: 1}\nprotect:\n  max_in_flight: 40\n  adaptive: {latency_target: 100ms}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.realClock = true
			h.writeConfig(protectConfig("{{UPSTREAM}}", tc.protect))
			h.serve()
			var wg sync.WaitGroup
			statuses := make([]string, 4)
			for i := range statuses {
				wg.Add(1)
				go func() { defer wg.Done(); statuses[i] = dripChunks(t, h, 400*time.Millisecond) }()
			}
			wg.Wait()
			for i, s := range statuses {
				if s != "200 " {
					t.Errorf("upload %d: %q, want 200", i, s)
				}
			}
			m := h.metrics()
			if slow, all := upstreamSlow(m); all != 4 || slow != 0 {
				t.Errorf("sluice_upstream_seconds: %v of %v answers over 0.5s, want 0 of 4 (the upstream answers at once)", slow, all)
			}
			if tc.protect != "" && metric(m, "sluice_in_flight_limit") != 40 {
				t.Errorf("sluice_in_flight_limit %v after slow uploads, want 40", metric(m, "sluice_in_flight_limit"))
			}
		})
	}
}
