package gossip

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/storetest"
)

// TestConformanceAlone runs the window algorithms' tables on one instance,
// which has no peer and so decides exactly as limiter.Decide.
func TestConformanceAlone(t *testing.T) {
	for _, tb := range storetest.Tables() {
		if !windowTable(tb) {
			continue
		}
		t.Run(tb.Name, func(t *testing.T) {
			storetest.Check(t, start(t, "alone", Options{}), tb)
		})
	}
}

// windowTable reports whether every limit of tb is of an algorithm the
// store keeps.
func windowTable(tb storetest.Table) bool {
	if !Supported(tb.Limit.Algorithm()) {
		return false
	}
	for _, s := range tb.Steps {
		if !s.Limit.IsZero() && !Supported(s.Limit.Algorithm()) {
			return false
		}
	}
	return true
}

// TestBoundRoundRobin counts what three instances on loopback admit of one
// caller's burst spread round-robin over them: never more than limit +
// 2 × max_unsynced, and the whole limit once the exchanges have settled.
func TestBoundRoundRobin(t *testing.T) {
	const rate, maxUnsynced = 100, 5
	for _, alg := range []limiter.Algorithm{limiter.FixedWindow, limiter.SlidingWindow} {
		t.Run(alg.String(), func(t *testing.T) {
			ss := fleet(t, 3, Options{MaxUnsynced: maxUnsynced})
			l := limiter.MustNew(alg, rate, time.Hour, 0)
			now := time.Now().Truncate(time.Hour).Add(time.Minute) // one window throughout
			bound := int64(rate + (len(ss)-1)*maxUnsynced)
			admitted := int64(0)
			ask := func(i int) limiter.Decision {
				d, err := ss[i%len(ss)].Decide(context.Background(), store.RawKey("caller"), l, now, 1)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					admitted++
				}
				if admitted > bound {
					t.Fatalf("request %d: %d admitted, more than limit %d + 2 × max_unsynced %d", i, admitted, rate, maxUnsynced)
				}
				return d
			}
			for i := range 10 * rate { // the burst, faster than any exchange
				ask(i)
			}
			t.Logf("%d of a burst of %d admitted at once", admitted, 10*rate)
			// Then keep asking, one request per instance in turn, until
			// every instance denies for the window rather than for the
			// next exchange.
			eventually(t, "every instance denies for the limit", func() bool {
				full := 0
				for i := range ss {
					if d := ask(i); !d.Allowed && d.RetryAfter > time.Minute {
						full++
					}
				}
				return full == len(ss)
			})
			t.Logf("%d admitted in all (limit %d, bound %d)", admitted, rate, bound)
			if admitted < rate {
				t.Errorf("%d admitted, less than the limit %d", admitted, rate)
			}
		})
	}
}

// TestBurstWaitsForExchange: a burst on one instance beyond max_unsynced
// is denied with RetryAfter the interval, and admitted after the exchange.
func TestBurstWaitsForExchange(t *testing.T) {
	ss := fleet(t, 2, Options{MaxUnsynced: 3, Interval: 50 * time.Millisecond})
	l := limiter.MustNew(limiter.FixedWindow, 100, time.Hour, 0)
	now := time.Now()
	for i := range 3 {
		if d, _ := ss[0].Decide(context.Background(), store.RawKey("k"), l, now, 1); !d.Allowed {
			t.Fatalf("request %d denied: %+v", i, d)
		}
	}
	d, _ := ss[0].Decide(context.Background(), store.RawKey("k"), l, now, 1)
	if d.Allowed || d.RetryAfter != 50*time.Millisecond || d.Remaining != 97 {
		t.Fatalf("4th request: %+v, want denied, RetryAfter 50ms, Remaining 97", d)
	}
	eventually(t, "the 4th request passes after the exchange", func() bool {
		d, _ := ss[0].Decide(context.Background(), store.RawKey("k"), l, now, 1)
		return d.Allowed
	})
	eventually(t, "the other instance counts 4", func() bool { return remaining(t, ss[1], store.RawKey("k"), l, now) == 96 })
}

// TestLeaveKeepsCounts: an instance that leaves keeps its admissions
// counted by the others until the window ends.
func TestLeaveKeepsCounts(t *testing.T) {
	ss := fleet(t, 3, Options{MaxUnsynced: 5})
	l := limiter.MustNew(limiter.FixedWindow, 100, time.Hour, 0)
	now := time.Now()
	admit(t, ss[2], store.RawKey("k"), l, now, 30)
	eventually(t, "i0 counts i2's 30", func() bool { return remaining(t, ss[0], store.RawKey("k"), l, now) == 70 })
	if err := ss[2].Close(); err != nil {
		t.Fatal(err)
	}
	waitMembers(t, ss[0], 2)
	waitMembers(t, ss[1], 2)
	for _, s := range ss[:2] {
		if r := remaining(t, s, store.RawKey("k"), l, now); r != 70 {
			t.Errorf("%s: remaining %d after i2 left, want 70", s.name, r)
		}
	}
	n := admit(t, ss[0], store.RawKey("k"), l, now, 1000)
	if n != 70 {
		t.Errorf("i0 admitted %d after i2 left, want the 70 left", n)
	}
}

// TestCloseTellsLastCounts: an instance closed before its next exchange
// tells the others what it admitted beyond what they acknowledged (its
// max_unsynced) before it leaves, so that none of it is lost to them.
func TestCloseTellsLastCounts(t *testing.T) {
	// No exchange of their own (an interval of an hour): the test makes
	// them until all know each other, then only Close's are left.
	var ss []*Store
	for i := range 3 {
		o := Options{MaxUnsynced: 5, Interval: time.Hour}
		if i > 0 {
			o.Join = []string{ss[0].Addr()}
		}
		ss = append(ss, start(t, fmt.Sprintf("i%d", i), o))
	}
	eventually(t, "all know each other and have their counts", func() bool {
		for _, s := range ss {
			s.exchange()
		}
		for _, s := range ss {
			if v := s.view.Load(); len(s.Members()) != 3 || !v.synced {
				return false
			}
		}
		return true
	})
	l := limiter.MustNew(limiter.FixedWindow, 100, time.Hour, 0)
	now := time.Now()
	if n := admit(t, ss[2], store.RawKey("k"), l, now, 5); n != 5 {
		t.Fatalf("i2 admitted %d, want its max_unsynced 5", n)
	}
	if err := ss[2].Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range ss[:2] {
		if r := remaining(t, s, store.RawKey("k"), l, now); r != 95 {
			t.Errorf("%s: remaining %d once i2 closed, want 95 (its 5 told before it left)", s.name, r)
		}
	}
}

// TestCloseDuringDecide: a decision that read the closed flag before
// Close began, and goes on once Close has told the others its last counts
// and left, is refused: an admission then would never reach them.
func TestCloseDuringDecide(t *testing.T) {
	ss := fleet(t, 2, Options{MaxUnsynced: 5})
	l := limiter.MustNew(limiter.FixedWindow, 100, time.Hour, 0)
	now := time.Now()
	passed, resume := make(chan struct{}), make(chan struct{})
	ss[1].afterClosedCheck = func() { close(passed); <-resume }
	type result struct {
		d   limiter.Decision
		err error
	}
	decided := make(chan result, 1)
	go func() {
		d, err := ss[1].Decide(context.Background(), store.RawKey("k"), l, now, 1)
		decided <- result{d, err}
	}()
	<-passed
	closed := make(chan error, 1)
	go func() { closed <- ss[1].Close() }()
	select {
	case err := <-closed: // told and left, the decision still under way
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second): // Close waits for it: as good
	}
	close(resume)
	r := <-decided
	if r.err == nil && r.d.Allowed && remaining(t, ss[0], store.RawKey("k"), l, now) != 99 {
		t.Errorf("admitted once closed, and the other instance never told (remaining %d, want 99)", remaining(t, ss[0], store.RawKey("k"), l, now))
	}
	if r.err != nil && !errors.Is(r.err, store.ErrClosed) {
		t.Errorf("decision while closing: %v, want store.ErrClosed", r.err)
	}
}

// admit asks s for requests on key until n are admitted or the limit is
// reached, and returns how many were.
func admit(t *testing.T, s *Store, key store.Key, l limiter.Limit, now time.Time, n int) int {
	t.Helper()
	got := 0
	eventually(t, "admitted "+strconv.Itoa(n), func() bool {
		for got < n {
			d, err := s.Decide(context.Background(), key, l, now, 1)
			if err != nil {
				t.Fatal(err)
			}
			if !d.Allowed {
				return d.RetryAfter > time.Minute // the limit: stop
			}
			got++
		}
		return true
	})
	return got
}

// TestKillKeepsCounts kills an instance (SIGKILL, another process): the
// others keep its count and go on deciding within the limit.
func TestKillKeepsCounts(t *testing.T) {
	ss := fleet(t, 2, Options{MaxUnsynced: 5})
	l := limiter.MustNew(limiter.FixedWindow, 100, time.Hour, 0)
	now := time.Now().Truncate(time.Hour).Add(time.Minute)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GOSSIP_CHILD_JOIN="+ss[0].Addr(), "GOSSIP_CHILD_NOW="+strconv.FormatInt(now.UnixMicro(), 10))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "admitted 30" {
		t.Fatalf("child said %q, %v", line, err)
	}
	eventually(t, "both count the child's 30", func() bool {
		return remaining(t, ss[0], store.RawKey("k"), l, now) == 70 && remaining(t, ss[1], store.RawKey("k"), l, now) == 70
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitMembers(t, ss[0], 2)
	waitMembers(t, ss[1], 2)
	for _, s := range ss {
		if r := remaining(t, s, store.RawKey("k"), l, now); r != 70 {
			t.Errorf("%s: remaining %d after the child died, want 70", s.name, r)
		}
	}
	n := admit(t, ss[0], store.RawKey("k"), l, now, 35) + admit(t, ss[1], store.RawKey("k"), l, now, 1000)
	if n < 70 || n > 70+5 {
		t.Errorf("the survivors admitted %d more, want 70 to 75", n)
	}
}

// childMain is the killed instance of TestKillKeepsCounts and the stopped
// one of TestStoppedMember, when the test binary runs with
// GOSSIP_CHILD_JOIN: it joins, admits 30 requests, says so, then answers
// the commands on its standard input (childCommands) and waits to be
// killed.
func childMain() bool {
	join := os.Getenv("GOSSIP_CHILD_JOIN")
	if join == "" {
		return false
	}
	us, _ := strconv.ParseInt(os.Getenv("GOSSIP_CHILD_NOW"), 10, 64)
	s, err := New(Options{Bind: "127.0.0.1:0", Name: "child", Join: []string{join}, MaxUnsynced: 5,
		Interval: 20 * time.Millisecond, tune: fast})
	if err != nil {
		os.Stdout.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	l := limiter.MustNew(limiter.FixedWindow, 100, time.Hour, 0)
	for n := 0; n < 30; {
		if d, _ := s.Decide(context.Background(), store.RawKey("k"), l, time.UnixMicro(us), 1); d.Allowed {
			n++
		} else {
			time.Sleep(time.Millisecond)
		}
	}
	os.Stdout.WriteString("admitted 30\n")
	childCommands(s, l, time.UnixMicro(us))
	select {}
}

// childCommands answers, one line each, "remaining" with what s has left
// of key k, and "admit" with how many requests s admits on k before its
// first denial.
func childCommands(s *Store, l limiter.Limit, now time.Time) {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "remaining":
			d, _ := s.Decide(context.Background(), store.RawKey("k"), l, now, 0)
			os.Stdout.WriteString("remaining " + strconv.FormatInt(d.Remaining, 10) + "\n")
		case "admit":
			n := 0
			for {
				if d, _ := s.Decide(context.Background(), store.RawKey("k"), l, now, 1); !d.Allowed {
					break
				}
				n++
			}
			os.Stdout.WriteString("admitted " + strconv.Itoa(n) + "\n")
		}
	}
}

// TestWrongKeyCannotJoin: an instance whose key differs cannot join, one
// with the same key can.
func TestWrongKeyCannotJoin(t *testing.T) {
	k1, k2 := []byte("0123456789abcdef"), []byte("fedcba9876543210")
	a := start(t, "a", Options{Key: k1})
	b := start(t, "b", Options{Key: k2, Join: []string{a.Addr()}})
	if n, m := len(a.Members()), len(b.Members()); n != 1 || m != 1 {
		t.Errorf("with different keys: %d and %d members, want 1 and 1", n, m)
	}
	c := start(t, "c", Options{Key: k1, Join: []string{a.Addr()}})
	waitMembers(t, a, 2)
	waitMembers(t, c, 2)
	if _, err := New(Options{Bind: "127.0.0.1:0", Key: []byte("short")}); err == nil {
		t.Error("a 5-byte key was accepted")
	}
}

// TestUnsupportedAlgorithm: the bucket algorithms and sliding_log are an
// error, not a decision.
func TestUnsupportedAlgorithm(t *testing.T) {
	s := start(t, "a", Options{})
	for _, alg := range []limiter.Algorithm{limiter.TokenBucket, limiter.GCRA, limiter.LeakyBucket, limiter.SlidingLog} {
		_, err := s.Decide(context.Background(), store.RawKey("k"), limiter.MustNew(alg, 10, time.Second, 0), time.Now(), 1)
		if err == nil || !strings.Contains(err.Error(), SupportedNames) {
			t.Errorf("%v: %v, want an error naming %s", alg, err, SupportedNames)
		}
	}
}

// TestMaxKeys: the store holds at most MaxKeys keys of its own; the keys
// without room share their rule's overflow counter, which still limits.
func TestMaxKeys(t *testing.T) {
	s := start(t, "a", Options{MaxKeys: shards})
	l := limiter.MustNew(limiter.FixedWindow, 10, time.Hour, 0)
	now := time.Now()
	allowed := 0
	for i := range 10_000 {
		d, err := s.Decide(context.Background(), store.NewKey("r", strconv.Itoa(i)), l, now, 1)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			allowed++
		}
	}
	if k := s.Stats().Keys; k > shards+1 {
		t.Errorf("%d keys held, want at most %d and the overflow counter", k, shards)
	}
	if allowed > 10*shards+10 {
		t.Errorf("%d allowed, more than %d keys × 10 and the overflow counter's 10", allowed, shards)
	}
}

// TestDecideEachShared: a decision of DecideEach on a rule's overflow
// counter (a new key without room, a key too long for a message) is
// Shared; one on a key of its own is not.
func TestDecideEachShared(t *testing.T) {
	s := start(t, "a", Options{MaxKeys: shards}) // one key a shard
	l := limiter.MustNew(limiter.FixedWindow, 10, time.Hour, 0)
	now := time.Now()
	for i := range 10_000 { // every shard full
		if _, err := s.Decide(context.Background(), store.NewKey("fill", strconv.Itoa(i)), l, now, 1); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.DecideEach(context.Background(), nil, []store.Request{
		{Key: store.NewKey("fill", "0"), Limit: l, Cost: 1}, // the first: it found room
		{Key: store.NewKey("r", "new"), Limit: l, Cost: 1},
		{Key: store.NewKey("q", strings.Repeat("x", maxKeyLen)), Limit: l, Cost: 1},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true, true} {
		if res[i].Err != nil || res[i].Shared != want {
			t.Errorf("request %d: %+v, want Shared %v", i, res[i], want)
		}
	}
}

// TestClosed: a closed store refuses to decide.
func TestClosed(t *testing.T) {
	s := start(t, "a", Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Decide(context.Background(), store.RawKey("k"), limiter.MustNew(limiter.FixedWindow, 1, time.Second, 0), time.Now(), 1)
	if !errors.Is(err, store.ErrClosed) {
		t.Errorf("Decide after Close: %v", err)
	}
}

// TestMembersWhileTheFleetChanges reads Members while members join,
// leave and rejoin: it reads copies the store made under memberlist's
// locks, never memberlist's own nodes, which it rewrites as it learns of
// them (a data race under -race before).
func TestMembersWhileTheFleetChanges(t *testing.T) {
	a := start(t, "a", Options{})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, m := range a.Members() {
				_ = m.Addr + m.State
			}
		}
	}()
	for range 6 {
		b := start(t, "b", Options{Join: []string{a.Addr()}}) // the same name, another port: memberlist rewrites its node
		eventually(t, "a knows b", func() bool { return len(a.Members()) == 2 })
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		eventually(t, "a forgets b", func() bool { return len(a.Members()) == 1 })
	}
	close(stop)
	<-done
	if m := a.Members(); len(m) != 1 || !m[0].Self || m[0].Addr != a.Addr() || m[0].State != "alive" {
		t.Errorf("Members() = %+v, want a alone, alive", m)
	}
}
