package main

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args []string
		ok   bool
	}{
		{[]string{"-addr", "127.0.0.1:6390"}, true},
		{[]string{"-addr", "127.0.0.1:6390", "-mode", "keys", "-keys", "10", "-api", "batch"}, true},
		{[]string{}, false},
		{[]string{"-addr", "x", "-mode", "cold"}, false},
		{[]string{"-addr", "x", "-api", "other"}, false},
		{[]string{"-addr", "x", "-duration", "0s"}, false},
		{[]string{"-addr", "x", "-concurrency", "0"}, false},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.args)
		if (err == nil) != tt.ok {
			t.Errorf("parseFlags(%q): err %v, want ok=%v", tt.args, err, tt.ok)
		}
	}
}

func TestQuantile(t *testing.T) {
	r := result{lat: []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5}, {0.99, 10}, {0, 1}, {1, 10}} {
		if got := r.quantile(tt.q); got != tt.want {
			t.Errorf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if got := (result{}).quantile(0.5); got != 0 {
		t.Errorf("quantile of nothing = %v, want 0", got)
	}
}

// TestDriveCountsCallsAndErrors checks what drive tallies, not how fast.
func TestDriveCountsCallsAndErrors(t *testing.T) {
	var n atomic.Int64
	boom := errors.New("boom")
	// Every other call overall fails, whichever goroutine makes it: with
	// seq%2, an even concurrency gave half the goroutines only failures and
	// half only successes, and a loaded machine that ran only the failing
	// half in the window counted no calls.
	call := func(int) error {
		if n.Add(1)%2 == 0 {
			return boom
		}
		return nil
	}
	res, err := drive(call, config{concurrency: 4, duration: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.calls == 0 || res.errors == 0 || !errors.Is(res.firstErr, boom) {
		t.Fatalf("calls %d, errors %d, first %v: want both counted and boom first", res.calls, res.errors, res.firstErr)
	}
	if int64(res.calls+res.errors) > n.Load() || len(res.lat) != res.calls {
		t.Errorf("calls %d + errors %d of %d made, %d latencies", res.calls, res.errors, n.Load(), len(res.lat))
	}
}
