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
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/gateway"
)

// TestLoopAnswered508: a gateway whose upstream is its own address (a loop
// check cannot see: listen names another port) answers 508 once, instead
// of forwarding to itself until file descriptors run out. The connection
// cap and upstream timeout bound the damage if detection failed.
func TestLoopAnswered508(t *testing.T) {
	ln, adm := listen(t), listen(t)
	runGatewayOn(t, ln, adm, strings.Replace(serverConfig("  max_connections: 16\n  upstream_timeout: 2s\n"), "{{UPSTREAM}}", "http://"+ln.Addr().String(), 1))
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/claims/1", nil)
	req.Header.Set("X-API-Key", keyA)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusLoopDetected || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("status %d %q, want 508 problem+json", resp.StatusCode, body)
	}
	if v := resp.Header.Values("Sluice-Loop-Mark"); len(v) != 0 {
		t.Errorf("the caller saw the loop mark %q", v)
	}
}

// TestLoopOfTwoCaughtDespiteCallerMarks: two instances each other's
// upstream (a misconfigured pair of tiers) catch the loop even when the
// caller sends as many well-formed marks as are forwarded: the marks kept
// are the nearest hops', so a caller's cannot push an instance's own mark
// out and send one request round the pair until connections run out.
func TestLoopOfTwoCaughtDespiteCallerMarks(t *testing.T) {
	lnA, admA, lnB, admB := listen(t), listen(t), listen(t), listen(t)
	settings := serverConfig("  max_connections: 16\n  upstream_timeout: 2s\n")
	runGatewayOn(t, lnA, admA, strings.Replace(settings, "{{UPSTREAM}}", "http://"+lnB.Addr().String(), 1))
	runGatewayOn(t, lnB, admB, strings.Replace(settings, "{{UPSTREAM}}", "http://"+lnA.Addr().String(), 1))
	fakes := make([]string, 7)
	for i := range fakes {
		fakes[i] = fmt.Sprintf("%032x", i+1)
	}
	c, err := net.Dial("tcp", lnA.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET /claims/1 HTTP/1.1\r\nHost: a\r\nX-API-Key: "+keyA+
		"\r\nSluice-Loop-Mark: "+strings.Join(fakes, ", ")+"\r\nConnection: close\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusLoopDetected {
		t.Fatalf("status %d, want 508: the request went round the pair", resp.StatusCode)
	}
}

// TestLoopWithBodyAnswered508: a looped request with a body is answered
// 508 by the instance it came back to, which does not wait for the rest of
// the body first (it closes the connection instead). The instance it went
// through first passes that answer on once it has sent the whole body on
// (its upstream client reads an answer only after the request): a body
// still arriving there ends in that instance's 408 at server.body_timeout,
// and the loop still goes no further.
func TestLoopWithBodyAnswered508(t *testing.T) {
	ln, adm := listen(t), listen(t)
	runGatewayOn(t, ln, adm, strings.Replace(serverConfig("  body_timeout: 500ms\n"), "{{UPSTREAM}}", "http://"+ln.Addr().String(), 1))
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "POST /submit HTTP/1.1\r\nHost: a\r\nX-API-Key: "+keyA+"\r\nContent-Length: 1\r\n\r\nx")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer while the body was still arriving: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusLoopDetected {
		t.Fatalf("status %d, want 508", resp.StatusCode)
	}
}

// runGatewayOn serves a gateway for cfg on ln and adm until the test ends;
// it returns the function that starts the shutdown, and Run's result (a
// test that takes the result puts one back for the cleanup).
func runGatewayOn(t *testing.T, ln, adm net.Listener, cfg string) (stop context.CancelFunc, ran chan error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Options{Config: file, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	ran = make(chan error, 1)
	go func() { ran <- g.Run(ctx, ln, adm) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-ran:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
	})
	return cancel, ran
}

// runResult waits for runGatewayOn's Run to return once the shutdown has
// begun (10s at most) and returns its result, putting one back on ran for
// the cleanup.
func runResult(t *testing.T, ran chan error) error {
	t.Helper()
	select {
	case err := <-ran:
		ran <- nil // for the cleanup
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
		return nil
	}
}

// TestLoopMarkFromCallers: what a caller writes in the mark header gets no
// one a 508: guessed marks are forwarded (after being checked), junk is
// dropped, and the gateway's own mark never reaches the caller, even from
// an upstream that echoes request headers.
func TestLoopMarkFromCallers(t *testing.T) {
	var got []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Values("Sluice-Loop-Mark")
		for k, v := range r.Header {
			w.Header()[k] = v // an echoing upstream
		}
	}))
	defer up.Close()
	h := startGateway(t, strings.Replace(standardConfig, "{{UPSTREAM}}", up.URL, 1))
	guess := strings.Repeat("0f", 16)
	r := h.do(h.url, http.MethodGet, "/claims/1", map[string]string{"X-API-Key": keyA,
		"Sluice-Loop-Mark": "junk, " + guess + ", " + strings.Repeat("a", 5000)}, "")
	if r.Status != http.StatusOK {
		t.Fatalf("status %d %q, want 200", r.Status, r.Body)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], guess+", ") || len(got[0]) != 2*32+2 {
		t.Errorf("upstream got marks %q, want the caller's well-formed one, then the gateway's", got)
	}
	if v := r.Header.Values("Sluice-Loop-Mark"); len(v) != 0 {
		t.Errorf("the caller saw the loop mark %q", v)
	}
}

// TestLoopMarkHeaderCostsNoMore: a mark header full of commas costs the
// gateway no more memory than any other header of its size; splitting it
// into strings cost 16 bytes a comma, twice (about 2 MB for a 64 KiB
// header), multiplying what a caller sends by 30.
func TestLoopMarkHeaderCostsNoMore(t *testing.T) {
	h := startGateway(t, standardConfig)
	commas := strings.Repeat(",", 60_000)
	allocated := func(header string) uint64 {
		c := h.dial()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 20 {
			c.write("GET /claims/1 HTTP/1.1\r\nHost: x\r\nX-API-Key: " + keyB + "\r\n" + header + ": " + commas + "\r\n\r\n")
			c.mustRead(http.StatusOK)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	other, marks := allocated("X-Other"), allocated("Sluice-Loop-Mark")
	if marks > 2*other {
		t.Errorf("20 requests with a mark header of 60000 commas allocated %d KiB, with another header %d KiB", marks>>10, other>>10)
	}
}
