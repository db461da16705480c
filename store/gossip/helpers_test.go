package gossip

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if childMain() {
		return
	}
	goleak.VerifyTestMain(m)
}

// fast makes the membership notice a dead member within about a second.
func fast(c *memberlist.Config) {
	c.ProbeInterval, c.ProbeTimeout = 100*time.Millisecond, 50*time.Millisecond
	c.GossipInterval, c.SuspicionMult, c.SuspicionMaxTimeoutMult = 20*time.Millisecond, 2, 2
	c.PushPullInterval = 0
	c.TCPTimeout = time.Second
}

// start starts an instance on a free loopback port; it is closed when t
// ends.
func start(t testing.TB, name string, opts Options) *Store {
	t.Helper()
	opts.Bind, opts.Name, opts.tune = "127.0.0.1:0", name, fast
	if opts.Interval == 0 {
		opts.Interval = 20 * time.Millisecond
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fleet starts n instances, each joining the first, and waits until every
// one knows all of them.
func fleet(t testing.TB, n int, opts Options) []*Store {
	t.Helper()
	var ss []*Store
	for i := range n {
		o := opts
		if i > 0 {
			o.Join = []string{ss[0].Addr()}
		}
		ss = append(ss, start(t, fmt.Sprintf("i%d", i), o))
	}
	for _, s := range ss {
		waitMembers(t, s, n)
	}
	return ss
}

// waitMembers waits until s knows n members, itself included, and has
// heard every count of each peer.
func waitMembers(t testing.TB, s *Store, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s knows %d members", s.name, n), func() bool {
		v := s.view.Load()
		return len(s.Members()) == n && v.synced && (n == 1) == v.alone
	})
}

// eventually polls cond until it holds, failing t after 20s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// remaining is what s says key has left under l at now, without spending.
func remaining(t testing.TB, s *Store, key store.Key, l limiter.Limit, now time.Time) int64 {
	t.Helper()
	d, err := s.Decide(context.Background(), key, l, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	return d.Remaining
}
