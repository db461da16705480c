package redis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// decideKeysNow runs the keys script for calls (one slot group) and
// returns their outcomes.
func decideKeysNow(s *Store, calls []call) []outcome {
	batch := make([]*waiter, len(calls))
	for i, c := range calls {
		batch[i] = &waiter{ctx: context.Background(), c: c, by: time.Now().Add(s.timeout), done: make(chan outcome, 1)}
	}
	s.keysBatch(calls[0].sc, batch)
	out := make([]outcome, len(batch))
	for i, w := range batch {
		out[i] = <-w.done
	}
	return out
}

// TestKeysDifferential replays random batches (one to eight requests at
// one time on three keys, a key perhaps more than once, random costs)
// through the keys scripts and through limiter.Decide one request after
// another, per key: every decision must be identical, as must the state
// each leaves for the next.
func TestKeysDifferential(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	for i, c := range diffCases() {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			l := mustLimit(t, c.alg, c.rate, c.period, c.burst)
			rng := rand.New(rand.NewPCG(*diffSeed, 2000+uint64(i)))
			var models [3]model
			var history strings.Builder
			now := c.start
			period := int64(l.Period() / time.Microsecond)
			p, n := l.Interval()
			for step := range *diffSteps / 2 {
				now = nextTime(rng, now, period, max(p/n, 1))
				at := time.UnixMicro(now)
				calls := make([]call, 1+rng.IntN(8))
				keys := make([]int, len(calls))
				for j := range calls {
					keys[j] = rng.IntN(len(models))
					calls[j] = s.newCall(store.RawKey("keysdiff:"+c.String()+":"+strconv.Itoa(keys[j])), l, nextCost(rng, l.Burst()), at)
				}
				got := decideKeysNow(s, calls)
				for j, k := range keys {
					want := models[k].decide(l, at, calls[j].cost)
					fmt.Fprintf(&history, "  step %d.%d: key %d now %d cost %d -> %+v\n", step, j, k, now, calls[j].cost, want)
					if got[j].err != nil || got[j].d != want {
						t.Fatalf("%v: step %d, request %d on key %d (now %d µs):\n redis %+v (%v)\n go    %+v\nsteps so far (go):\n%s",
							l, step, j, k, now, got[j].d, got[j].err, want, history.String())
					}
				}
			}
		})
	}
}

// TestKeysOneFails: a request whose decision raises an error (here a
// request of the wrong length) fails alone; the others of its call are
// decided as their own calls would have been.
func TestKeysOneFails(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	l := mustLimit(t, limiter.FixedWindow, 5, time.Minute, 0)
	calls := []call{s.newCall(store.RawKey("a"), l, 1, epoch), s.newCall(store.RawKey("b"), l, 1, epoch), s.newCall(store.RawKey("a"), l, 2, epoch)}
	calls[1].req = calls[1].req[:8]
	got := decideKeysNow(s, calls)
	if got[0].err != nil || got[0].d.Remaining != 4 || got[2].err != nil || got[2].d.Remaining != 2 {
		t.Errorf("the good requests: %+v and %+v, want allowed with 4 then 2 left", got[0], got[2])
	}
	if got[1].err == nil || !strings.Contains(got[1].err.Error(), "redis store: eval fixed_window") {
		t.Errorf("the bad request: %+v, want the script's error", got[1])
	}
}

// slotState returns a slot group's calls in flight and requests waiting.
func (s *Store) slotState(g slotGroup) (flying, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.slots[g]; q != nil {
		return q.flying, len(q.waiting)
	}
	return 0, 0
}

// TestKeysBatching holds slotFlights calls on a standalone Redis in flight
// (Redis paused) while requests on ten other keys arrive, then keyFlights
// more on one of them: the ten and the key's second (its calls in flight
// are not all taken) must go together in one script call once Redis
// answers, the key named twice in it, and its last after them on its key,
// each decided exactly.
func TestKeysBatching(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	l := mustLimit(t, limiter.FixedWindow, 5, time.Minute, 0)
	g := slotGroup{sc: scripts[limiter.FixedWindow]}
	before := redistest.ScriptCalls(t, srv.Addr)
	srv.Pause()
	defer srv.Resume()
	out := make(chan string, 20)
	ask := func(key string) {
		d, err := s.Decide(context.Background(), store.RawKey(key), l, epoch, 1)
		out <- fmt.Sprintf("%s %v %d %v", key, d.Allowed, d.Remaining, err)
	}
	for i := range slotFlights {
		go ask("held" + strconv.Itoa(i))
	}
	waitFor(t, "the held calls", func() bool { f, _ := s.slotState(g); return f == slotFlights })
	for i := range 10 {
		go ask("k" + strconv.Itoa(i))
	}
	waitFor(t, "ten requests to wait", func() bool { _, w := s.slotState(g); return w == 10 })
	k0 := redisKey(s.prefix, store.RawKey("k0"))
	for range keyFlights - 1 {
		go ask("k0")
	}
	waitFor(t, "k0's second request in the slot group", func() bool { _, w := s.slotState(g); return w == 10+keyFlights-1 })
	go ask("k0")
	waitFor(t, "k0's last request on its key", func() bool { return s.waiting(k0) == 1 })
	srv.Resume()
	got := map[string]int{}
	for range slotFlights + 10 + keyFlights {
		got[<-out]++
	}
	want := map[string]int{}
	for i := range keyFlights + 1 {
		want["k0 true "+strconv.Itoa(4-i)+" <nil>"] = 1
	}
	for i := range slotFlights {
		want["held"+strconv.Itoa(i)+" true 4 <nil>"] = 1
	}
	for i := 1; i < 10; i++ {
		want["k"+strconv.Itoa(i)+" true 4 <nil>"] = 1
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("decisions %v\nwant %v", got, want)
	}
	if calls := redistest.ScriptCalls(t, srv.Addr) - before; calls != slotFlights+2 {
		t.Errorf("%d requests took %d script calls, want %d (the held ones, the ten together, k0's last)", slotFlights+10+keyFlights, calls, slotFlights+2)
	}
	if f, w := s.slotState(g); f != 0 || w != 0 {
		t.Errorf("slot group left with %d in flight and %d waiting", f, w)
	}
}

// TestKeysWaiterDeadline hangs Redis while requests wait for a call of
// their slot group: each fails with the deadline Options.Timeout after it
// arrived, not after the calls before it and then its own.
func TestKeysWaiterDeadline(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	srv := redistest.StartServer(t)
	s, err := New(context.Background(), Options{Addrs: []string{srv.Addr}, Prefix: redistest.KeyPrefix(t), CallerTime: true, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := mustLimit(t, limiter.GCRA, 10, time.Minute, 0)
	g := slotGroup{sc: scripts[limiter.GCRA]}
	srv.Pause()
	defer srv.Resume()
	errs := make(chan error, slotFlights+3)
	ask := func(key string) {
		_, err := s.Decide(context.Background(), store.RawKey(key), l, epoch, 1)
		errs <- err
	}
	for i := range slotFlights {
		go ask("held" + strconv.Itoa(i))
	}
	waitFor(t, "the held calls", func() bool { f, _ := s.slotState(g); return f == slotFlights })
	time.Sleep(timeout / 2)
	start := time.Now()
	for i := range 3 {
		go ask("w" + strconv.Itoa(i))
	}
	for range slotFlights + 3 {
		if err := <-errs; !strings.Contains(fmt.Sprint(err), "deadline exceeded") {
			t.Errorf("a request on a hung Redis: %v, want the deadline", err)
		}
	}
	if took := time.Since(start); took > timeout*18/10 {
		t.Errorf("the waiting requests failed after %v, want about %v", took, timeout)
	}
}

// TestKeySlot: keySlot is the slot Redis Cluster gives a key
// (CLUSTER KEYSLOT), for the keys the store writes and odd braces.
func TestKeySlot(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	s := open(t, c.Addrs, true)
	keys := []string{"123456789", "", "a", "{user1000}.following", "{user1000}.followers", "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{}", "}{a}",
		redisKey("p:", store.RawKey("k")), redisKey("p:", store.RawKey("a{b}%c")), redisKey("p:", store.GroupKey("g", "r", "x")), redisKey("p:", store.GroupKey("g", "r", "y"))}
	for i := range 50 {
		keys = append(keys, redisKey("sluice:", store.NewKey("rls:bench", "key", "=", "k"+strconv.Itoa(i))))
	}
	for _, k := range keys {
		want, err := s.client.Do(context.Background(), s.client.B().ClusterKeyslot().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if got := keySlot(k); int64(got) != want {
			t.Errorf("keySlot(%q) = %d, CLUSTER KEYSLOT says %d", k, got, want)
		}
	}
}

// TestKeysBatchingCluster: on a Redis Cluster, the requests that waited go
// together per hash slot: keys of one group (one slot) in one call, a key
// of another slot in a call of its own, each on its node.
func TestKeysBatchingCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	s := open(t, c.Addrs, true)
	l := mustLimit(t, limiter.FixedWindow, 5, time.Minute, 0)
	sc := scripts[limiter.FixedWindow]
	var sameSlot []store.Key
	for _, r := range []string{"x", "y", "z"} {
		sameSlot = append(sameSlot, store.GroupKey("tenant-a", "r", r))
	}
	other := store.NewKey("b")
	gA := slotGroup{slot: keySlot(redisKey(s.prefix, sameSlot[0])), sc: sc}
	gB := slotGroup{slot: keySlot(redisKey(s.prefix, other)), sc: sc}
	if gA.slot == gB.slot {
		t.Fatalf("the keys share slot %d", gA.slot)
	}
	// Mark both groups' calls as all in flight, as the store's own.
	s.mu.Lock()
	s.slots[gA], s.slots[gB] = &slotQueue{flying: slotFlights}, &slotQueue{flying: slotFlights}
	s.mu.Unlock()
	before := redistest.ScriptCalls(t, c.Addrs...)
	out := make(chan string, 4)
	for _, k := range append(sameSlot, other) {
		go func() {
			d, err := s.Decide(context.Background(), k, l, epoch, 1)
			out <- fmt.Sprintf("%v %d %v", d.Allowed, d.Remaining, err)
		}()
	}
	waitFor(t, "the requests to wait", func() bool {
		_, a := s.slotState(gA)
		_, b := s.slotState(gB)
		return a == 3 && b == 1
	})
	for range slotFlights { // the marked calls land
		s.slotLand(gA, true)
		s.slotLand(gB, true)
	}
	for range 4 {
		if got := <-out; got != "true 4 <nil>" {
			t.Errorf("decision %q, want allowed with 4 left", got)
		}
	}
	if calls := redistest.ScriptCalls(t, c.Addrs...) - before; calls != 2 {
		t.Errorf("4 requests on 2 slots took %d script calls, want 2", calls)
	}
	waitFor(t, "the groups to be free", func() bool {
		a, _ := s.slotState(gA)
		b, _ := s.slotState(gB)
		return a == 0 && b == 0
	})
}

// TestKeysOneCallerDeadline: a waiter whose caller's deadline has passed
// fails only itself (its caller left on its own deadline); the others of
// its batch are decided, each bounded by Options.Timeout from its arrival.
func TestKeysOneCallerDeadline(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	l := mustLimit(t, limiter.FixedWindow, 5, time.Minute, 0)
	short, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancel()
	batch := []*waiter{
		{ctx: short, c: s.newCall(store.RawKey("gone"), l, 1, epoch)},
		{ctx: context.Background(), c: s.newCall(store.RawKey("a"), l, 1, epoch)},
		{ctx: context.Background(), c: s.newCall(store.RawKey("b"), l, 2, epoch)},
	}
	for _, w := range batch {
		w.by, w.done = time.Now().Add(s.timeout), make(chan outcome, 1)
	}
	s.keysBatch(batch[0].c.sc, batch)
	<-batch[0].done
	for i, want := range []int64{4, 3} {
		if o := <-batch[i+1].done; o.err != nil || !o.d.Allowed || o.d.Remaining != want {
			t.Errorf("request %d, its caller still there: %+v (%v), want allowed with %d left (not another caller's deadline)", i+1, o.d, o.err, want)
		}
	}
}

// TestKeysWaiterPastDeadline puts a waiter whose deadline has passed
// before one whose has not: the next batch leaves the first out, answering
// it with its deadline at once, rather than letting it end the batch's
// call before it starts (keysBatch) and fail the other with it.
func TestKeysWaiterPastDeadline(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	l := mustLimit(t, limiter.GCRA, 10, time.Minute, 0)
	late := &waiter{ctx: context.Background(), c: s.newCall(store.RawKey("late"), l, 1, epoch), by: time.Now().Add(-time.Millisecond), done: make(chan outcome, 1)}
	due := &waiter{ctx: context.Background(), c: s.newCall(store.RawKey("due"), l, 1, epoch), by: time.Now().Add(time.Minute), done: make(chan outcome, 1)}
	g := slotGroup{sc: scripts[limiter.GCRA]}
	s.mu.Lock()
	s.slots[g] = &slotQueue{flying: 1, waiting: []*waiter{late, due}}
	s.mu.Unlock()
	batch := s.nextKeys(g, false)
	if len(batch) != 1 || batch[0] != due {
		t.Fatalf("next batch %v, want only the waiter within its deadline", batch)
	}
	select {
	case o := <-late.done:
		if !errors.Is(o.err, context.DeadlineExceeded) {
			t.Errorf("waiter past its deadline: %v, want context.DeadlineExceeded", o.err)
		}
	default:
		t.Fatal("the waiter past its deadline was not answered")
	}
	s.keysBatch(g.sc, batch)
	if o := <-due.done; o.err != nil || !o.d.Allowed || o.d.Remaining != 9 {
		t.Errorf("the waiter within its deadline: %+v, %v; want allowed, remaining 9", o.d, o.err)
	}
	if batch := s.nextKeys(g, false); batch != nil {
		t.Errorf("after the last batch: %v", batch)
	}
	if f, w := s.slotState(g); f != 0 || w != 0 {
		t.Errorf("slot group left with %d in flight and %d waiting", f, w)
	}
}

// TestKeysOneTime: a keys call on Redis TIME reads the time once for all
// its requests (lua/keys_time.lua), and decides them all at it: eight
// requests on eight fresh keys of one fixed window end it at one instant.
func TestKeysOneTime(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, false)
	l := mustLimit(t, limiter.FixedWindow, 5, time.Minute, 0)
	calls := make([]call, 8)
	for i := range calls {
		calls[i] = s.newCall(store.RawKey("onetime:"+strconv.Itoa(i)), l, 1, time.Now())
	}
	before := timeCalls(t, s)
	got := decideKeysNow(s, calls)
	if n := timeCalls(t, s) - before; n != 1 {
		t.Errorf("one keys call of %d requests read TIME %d times, want 1", len(calls), n)
	}
	for i, o := range got {
		if o.err != nil || !o.d.Allowed || o.d.Reset != got[0].d.Reset {
			t.Errorf("request %d: %+v (%v), want allowed with the first's Reset %v", i, o.d, o.err, got[0].d.Reset)
		}
	}
}

// timeCalls is how many TIME commands the store's server has run, scripts'
// included (INFO commandstats).
func timeCalls(t *testing.T, s *Store) int {
	t.Helper()
	info, err := s.client.Do(context.Background(), s.client.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(line, "cmdstat_time:calls="); ok {
			n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	return 0
}
