package redis

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// refuser accepts connections on addr, counts them and closes each at
// once, as a port whose Redis is restarting might: a try to connect fails
// at once, and the count says how many tries were made.
type refuser struct {
	ln       net.Listener
	accepted atomic.Int64
	done     chan struct{}
}

func newRefuser(t *testing.T, addr string) *refuser {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r := &refuser{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.accepted.Add(1)
			c.Close()
		}
	}()
	return r
}

func (r *refuser) close() {
	r.ln.Close()
	<-r.done
}

// A lazy store starts while Redis is down, fails its calls fast, tries to
// connect at most once a second of its clock, and decides once Redis
// answers: here a real redis-server started after the store.
func TestLazyStoreConnectsWhenRedisAnswers(t *testing.T) {
	srv := redistest.StartServer(t)
	srv.Stop() // its address stays reserved for Restart
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	fake := clock.NewFake(epoch)
	s, err := New(canceled, Options{Addrs: []string{srv.Addr}, Lazy: true, Clock: fake,
		Prefix: redistest.KeyPrefix(t), Timeout: testTimeout})
	if err != nil {
		t.Fatalf("lazy New with Redis down (and a context already ended): %v", err)
	}
	defer s.Close()
	l := limiter.MustNew(limiter.FixedWindow, 2, time.Minute, 0)
	ctx := context.Background()

	down := newRefuser(t, srv.Addr)
	if _, err := s.Decide(ctx, store.RawKey("k"), l, epoch, 1); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Decide with Redis down: %v, want ErrNotConnected", err)
	}
	tries := down.accepted.Load()
	if tries == 0 {
		t.Fatal("the first call did not try to connect")
	}
	fake.Advance(redialEvery - time.Millisecond)
	if _, err := s.DecideEach(ctx, nil, []store.Request{{Key: store.RawKey("k"), Limit: l, Cost: 1}}, epoch); !errors.Is(err, ErrNotConnected) {
		t.Errorf("DecideEach before a second has passed: %v, want ErrNotConnected", err)
	}
	reqs := []store.Request{{Key: store.GroupKey("g", "a"), Limit: l, Cost: 1}, {Key: store.GroupKey("g", "b"), Limit: l, Cost: 1}}
	if _, err := s.DecideAll(ctx, nil, reqs, epoch); !errors.Is(err, ErrNotConnected) {
		t.Errorf("DecideAll before a second has passed: %v, want ErrNotConnected", err)
	}
	if n := down.accepted.Load(); n != tries {
		t.Errorf("%d more tries within a second of the first", n-tries)
	}
	down.close()

	srv.Restart(t)
	if _, err := s.Decide(ctx, store.RawKey("k"), l, epoch, 1); !errors.Is(err, ErrNotConnected) {
		t.Errorf("Decide with Redis up but before a second has passed: %v, want ErrNotConnected", err)
	}
	fake.Advance(time.Millisecond)
	for i, want := range []bool{true, true, false} {
		d, err := s.Decide(ctx, store.RawKey("k"), l, epoch, 1)
		if err != nil || d.Allowed != want {
			t.Fatalf("decision %d once Redis is up: %+v, %v; want allowed %v", i, d, err, want)
		}
	}
}

// Close ends a lazy store that never connected, and one that did, and
// leaves nothing running (goleak, in TestMain).
func TestLazyStoreClose(t *testing.T) {
	srv := redistest.StartServer(t)
	never, err := New(context.Background(), Options{Addrs: []string{"127.0.0.1:1"}, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := never.Close(); err != nil {
		t.Errorf("Close of a store that never connected: %v", err)
	}
	if err := never.Connect(context.Background()); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Connect after Close: %v, want store.ErrClosed", err)
	}
	s, err := New(context.Background(), Options{Addrs: []string{srv.Addr}, Lazy: true, Prefix: redistest.KeyPrefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Connect(context.Background()); err != nil {
		t.Fatalf("Connect with Redis up: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := s.Decide(context.Background(), store.RawKey("k"), limiter.MustNew(limiter.GCRA, 1, time.Second, 0), epoch, 1); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Decide after Close: %v, want store.ErrClosed", err)
	}
}
