package gossip

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// TestStoppedMember stops a member (SIGSTOP, another process) that had
// admitted 30 of a limit of 100: the two others, a side of k = 2, go on
// deciding and admit within limit + (k − 1) × max_unsynced, counting the
// stopped member's 30; the stopped member admits nothing while stopped and
// at most max_unsynced once it resumes, before it hears the others'
// counts. After SIGCONT the three agree on every count again, and the
// window's total stays within limit + (n − 1) × max_unsynced.
func TestStoppedMember(t *testing.T) {
	const limit, maxUnsynced = 100, 5
	ss := fleet(t, 2, Options{MaxUnsynced: maxUnsynced})
	l := limiter.MustNew(limiter.FixedWindow, limit, time.Hour, 0)
	now := time.Now().Truncate(time.Hour).Add(time.Minute)
	child := startChild(t, ss[0].Addr(), now)
	if line := child.read(t); line != "admitted 30" {
		t.Fatalf("child said %q", line)
	}
	eventually(t, "both count the child's 30", func() bool {
		return remaining(t, ss[0], store.RawKey("k"), l, now) == 70 && remaining(t, ss[1], store.RawKey("k"), l, now) == 70
	})
	child.signal(t, syscall.SIGSTOP)
	stopped := true
	defer func() {
		if stopped {
			child.signal(t, syscall.SIGCONT)
		}
	}()

	// Until the membership gives the child up, each of the others admits
	// at most max_unsynced beyond what the child acknowledged.
	early := 0
	for _, s := range ss {
		early += nowAdmits(t, s, "k", l, now)
	}
	member := len(ss[0].Members()) == 3 && len(ss[1].Members()) == 3 // still, so throughout
	if member && early > len(ss)*maxUnsynced {
		t.Errorf("while the child was stopped and not yet given up: %d admitted, want at most %d", early, len(ss)*maxUnsynced)
	}
	side := early
	for i := 0; ; i++ { // round robin until one says the limit is reached
		n := admit(t, ss[i%2], store.RawKey("k"), l, now, 1)
		if n == 0 {
			break
		}
		side += n
	}
	side += admit(t, ss[0], store.RawKey("k"), l, now, 1000) + admit(t, ss[1], store.RawKey("k"), l, now, 1000)
	if lo, hi := limit-30, limit-30+(len(ss)-1)*maxUnsynced; side < lo || side > hi {
		t.Errorf("the side of 2 admitted %d while the child was stopped, want %d to %d", side, lo, hi)
	}
	if len(ss[0].Members()) != 2 {
		t.Errorf("the child is still a member: %+v", ss[0].Members())
	}

	child.signal(t, syscall.SIGCONT)
	stopped = false
	child.write(t, "admit")
	resumed, err := strconv.Atoi(strings.TrimPrefix(child.read(t), "admitted "))
	if err != nil || resumed > maxUnsynced {
		t.Errorf("the resumed child admitted %d (%v), want at most %d", resumed, err, maxUnsynced)
	}
	total := 30 + side + resumed
	if bound := limit + (3-1)*maxUnsynced; total > bound {
		t.Errorf("%d admitted in the window, above limit + (n − 1) × max_unsynced = %d", total, bound)
	}
	want := strconv.Itoa(max(0, limit-total))
	eventually(t, "the three agree on "+strconv.Itoa(total)+" counted", func() bool {
		child.write(t, "remaining")
		return child.read(t) == "remaining "+want &&
			remaining(t, ss[0], store.RawKey("k"), l, now) == int64(limit-min(total, limit)) &&
			remaining(t, ss[1], store.RawKey("k"), l, now) == int64(limit-min(total, limit))
	})
	waitMembers(t, ss[0], 3)
	waitMembers(t, ss[1], 3)
	// In sync again, the two decide as before on a key of their own: past
	// max_unsynced, by the child's acknowledgements.
	for _, s := range ss {
		if n := admit(t, s, store.RawKey("k2"), l, now, 20); n != 20 {
			t.Errorf("%s admitted %d of k2 after the child came back, want 20", s.name, n)
		}
	}
	t.Logf("the side of 2 admitted %d (%d in the first burst), the resumed child %d: %d of %d", side, early, resumed, total, limit)
}

// nowAdmits asks s on key until its first denial and returns how many were
// admitted.
func nowAdmits(t *testing.T, s *Store, key string, l limiter.Limit, now time.Time) int {
	t.Helper()
	for n := 0; ; n++ {
		d, err := s.Decide(t.Context(), store.RawKey(key), l, now, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allowed {
			return n
		}
	}
}

// child is an instance in another process (childMain).
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startChild starts a child joining join, deciding at now; it is killed
// when t ends.
func startChild(t *testing.T, join string, now time.Time) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GOSSIP_CHILD_JOIN="+join, "GOSSIP_CHILD_NOW="+strconv.FormatInt(now.UnixMicro(), 10))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return &child{cmd: cmd, in: in, out: bufio.NewReader(out)}
}

func (c *child) read(t *testing.T) string {
	t.Helper()
	line, err := c.out.ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	return strings.TrimSpace(line)
}

func (c *child) write(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		t.Fatalf("child: %v", err)
	}
}

func (c *child) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}
