package gateway

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/internal/testcert"
)

// TestCertChangeBeforeWatch: files replaced after the pair was read but
// before the watch began (the gateway serves before its watch is set up)
// are presented once the watch begins, without another change to wake it.
func TestCertChangeBeforeWatch(t *testing.T) {
	dir := t.TempDir()
	first, second := testcert.New(t, testcert.Options{CommonName: "first"}), testcert.New(t, testcert.Options{CommonName: "second"})
	cert, key := first.Write(t, dir)
	src, err := newCertSource(config.TLS{Cert: cert, Key: key}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	second.Write(t, dir)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); src.watch(ctx) }()
	defer func() { stop(); <-done }()
	deadline := time.Now().Add(2 * time.Second)
	for src.pair.Load().Leaf.Subject.CommonName != "second" {
		if time.Now().After(deadline) {
			t.Fatalf("certificate %q, want second: a change before the watch began is never seen", src.pair.Load().Leaf.Subject.CommonName)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
