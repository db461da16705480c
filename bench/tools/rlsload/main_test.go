package main

import (
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestDriveNoop drives the no-op server briefly: calls are made and
// answered, none fails.
func TestDriveNoop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newNoop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Stop()
		<-served
	}()
	r, err := drive(ln.Addr().String(), 4, 10, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.calls == 0 || r.errors != 0 || r.over != 0 || r.perSecond <= 0 {
		t.Fatalf("got %+v, want calls, all OK", r)
	}
}
