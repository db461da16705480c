package gossip

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"go.uber.org/goleak"
)

// TestCloseWaitsForProbes: Close returns only once every goroutine the
// membership started has ended, among them a probe of a member that
// stopped answering, which memberlist's Shutdown leaves running for up to
// a probe interval.
func TestCloseWaitsForProbes(t *testing.T) {
	slow := func(c *memberlist.Config) { // a probe of a silent member lasts a second or more
		fast(c)
		c.ProbeInterval, c.ProbeTimeout = 2*time.Second, 500*time.Millisecond
		c.SuspicionMult = 10 // the silent member stays suspect, and probed, throughout
	}
	var ss []*Store
	for i := range 2 {
		o := Options{Bind: "127.0.0.1:0", Name: []string{"a", "b"}[i], Interval: 20 * time.Millisecond, tune: slow}
		if i > 0 {
			o.Join = []string{ss[0].Addr()}
		}
		s, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	a, b := ss[0], ss[1]
	waitMembers(t, a, 2)
	waitMembers(t, b, 2)
	crash(t, b)
	eventually(t, "a probing b, which no longer answers", func() bool {
		return strings.Contains(membershipGoroutines(0), "memberlist.(*Memberlist).probeNode")
	})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// Right away (within 50ms): a later look would let the probe end on
	// its own, as goleak's retries do.
	if left := membershipGoroutines(50 * time.Millisecond); left != "" {
		t.Fatalf("after Close, still running:\n%s", left)
	}
	goleak.VerifyNone(t)
}

// membershipGoroutines returns the stacks of the goroutines running
// memberlist's code, looking again for up to wait while there are some.
func membershipGoroutines(wait time.Duration) string {
	deadline := time.Now().Add(wait)
	buf := make([]byte, 1<<20)
	for {
		var left []string
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "hashicorp/memberlist.") {
				left = append(left, g)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return strings.Join(left, "\n\n")
		}
		time.Sleep(time.Millisecond)
	}
}

// crash stops s as a killed process would: no leave, the sockets closed,
// every goroutine ended.
func crash(t *testing.T, s *Store) {
	t.Helper()
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		close(s.stop)
		s.wg.Wait()
		_ = s.ml.Shutdown()
		if err := s.waitMembership(); err != nil {
			t.Error(err)
		}
	})
}
