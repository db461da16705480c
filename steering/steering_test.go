package steering

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/store/redis"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"))
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// backends returns a fresh backend of each kind, and a function making
// another handle on the same State (a second instance).
func backends(t *testing.T) map[string]func() Backend {
	dir := t.TempDir()
	srv := redistest.StartServer(t)
	prefix := redistest.KeyPrefix(t)
	return map[string]func() Backend{
		"file":  func() Backend { return NewFileBackend(filepath.Join(dir, "runtime.json"), nil) },
		"redis": func() Backend { return NewRedisBackend(openRedis(t, []string{srv.Addr}, prefix)) },
	}
}

func openRedis(t *testing.T, addrs []string, prefix string) *redis.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := redis.New(ctx, redis.Options{Addrs: addrs, Prefix: prefix, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// applied records what Apply was given.
type applied struct {
	mu  sync.Mutex
	got []State
}

func (a *applied) apply(st State) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, st)
}

func (a *applied) last() State {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.got) == 0 {
		return State{}
	}
	return a.got[len(a.got)-1]
}

func newManager(b Backend, a *applied, opts Options) *Manager {
	opts.Backend, opts.Logger = b, quiet
	if a != nil {
		opts.Apply = a.apply
	}
	return New(opts)
}

func TestPutRemoveAudit(t *testing.T) {
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			var a applied
			m := newManager(mk(), &a, Options{})
			if err := m.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			e, err := m.Put(ctx, Change{Target: "partner-a", Rule: "claims", Rate: "20/m", TTL: time.Hour, Reason: "floods", Author: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			if e.Expires.Sub(e.Since) != time.Hour {
				t.Errorf("expires %v after since %v, want 1h", e.Expires, e.Since)
			}
			if got := a.last(); got.Version != 1 || len(got.Overrides) != 1 || got.Overrides[0].Rate != "20/m" {
				t.Fatalf("applied %+v", got)
			}
			if _, err := m.Put(ctx, Change{Target: "partner-a", Rule: "claims", Rate: "10/m", Reason: "still floods", Author: "bob"}); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Put(ctx, Change{Target: "ip:203.0.113.0/24", Block: true, Reason: "attack", Author: "bob"}); err != nil {
				t.Fatal(err)
			}
			st, status := m.State()
			if st.Version != 3 || len(st.Overrides) != 2 || st.Overrides[1].Rate != "10/m" || status.Version != 3 {
				t.Fatalf("state %+v status %+v", st, status)
			}
			if _, err := m.Remove(ctx, "partner-b", "", "bob", ""); !errors.Is(err, ErrNotFound) {
				t.Errorf("remove of nothing: %v, want ErrNotFound", err)
			}
			gone, err := m.Remove(ctx, "partner-a", "", "carol", "calmed down")
			if err != nil || len(gone) != 1 {
				t.Fatalf("remove: %v %v", gone, err)
			}
			recs, err := m.Audit(ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			want := []struct{ action, from, to, author string }{
				{"remove", "rate 10/m until an operator removes it", "the configuration's limit", "carol"},
				{"set", "the configuration's limit", "block until an operator removes it", "bob"},
				{"set", "rate 20/m until " + e.Expires.UTC().Format(time.RFC3339), "rate 10/m until an operator removes it", "bob"},
				{"set", "the configuration's limit", "rate 20/m until " + e.Expires.UTC().Format(time.RFC3339), "alice"},
			}
			if len(recs) != len(want) {
				t.Fatalf("audit %+v", recs)
			}
			for i, w := range want {
				r := recs[i]
				if r.Action != w.action || r.From != w.from || r.To != w.to || r.Author != w.author || r.Version != uint64(4-i) {
					t.Errorf("audit[%d] = %+v, want %+v version %d", i, r, w, 4-i)
				}
			}
			// A second instance on the same backend reads it all.
			var b applied
			m2 := newManager(mk(), &b, Options{})
			if err := m2.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if got := b.last(); got.Version != 4 || len(got.Overrides) != 1 || !got.Overrides[0].Block {
				t.Errorf("second instance applies %+v", got)
			}
		})
	}
}

func TestRefusedChangesNothing(t *testing.T) {
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			refuse := errors.New("no such rule")
			m := newManager(mk(), nil, Options{MaxTTL: time.Hour, Check: func(_ State, e Entry) error {
				if e.Rule == "nope" {
					return &FieldError{Field: "rule", Msg: refuse.Error()}
				}
				return nil
			}})
			cases := []struct {
				ch    Change
				field string
			}{
				{Change{Target: "a", Rule: "nope", Rate: "1/s", TTL: time.Minute, Reason: "x"}, "rule"},
				{Change{Target: "a", Rule: "claims", Rate: "1/s", TTL: time.Minute}, "reason"},
				{Change{Target: "a", Rule: "claims", Rate: "1/s", TTL: -time.Minute, Reason: "x"}, "ttl"},
				{Change{Target: "a", Rule: "claims", Rate: "1/s", Reason: "x"}, "ttl"},
				{Change{Target: "a", Rule: "claims", Rate: "1/s", TTL: 2 * time.Hour, Reason: "x"}, "ttl"},
			}
			for _, c := range cases {
				_, err := m.Put(ctx, c.ch)
				var fe *FieldError
				if !errors.As(err, &fe) || fe.Field != c.field {
					t.Errorf("Put(%+v) = %v, want a FieldError on %s", c.ch, err, c.field)
				}
			}
			if _, err := m.SetDegrade(ctx, true, 0, "x", "a"); err == nil {
				t.Error("degrade without a ttl under max_ttl accepted")
			}
			if st, _, _ := m.opts.Backend.Load(ctx); st.Version != 0 {
				t.Errorf("refused changes committed version %d", st.Version)
			}
			if recs, _ := m.Audit(ctx, 10); len(recs) != 0 {
				t.Errorf("refused changes audited: %+v", recs)
			}
		})
	}
}

// TestConcurrentChanges: changes made at once at several instances are
// all kept (compare-and-set), each with its own version and record.
func TestConcurrentChanges(t *testing.T) {
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			const instances, each = 3, 5
			var wg sync.WaitGroup
			errs := make(chan error, instances*each)
			for i := range instances {
				m := newManager(mk(), nil, Options{})
				wg.Go(func() {
					for j := range each {
						target := string(rune('a'+i)) + string(rune('0'+j))
						if _, err := m.Put(ctx, Change{Target: target, Block: true, Reason: "r", Author: "t"}); err != nil {
							errs <- err
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			st, _, err := mk().Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.Version != instances*each || len(st.Overrides) != instances*each {
				t.Errorf("version %d with %d entries, want %d and %d", st.Version, len(st.Overrides), instances*each, instances*each)
			}
			recs, _ := newManager(mk(), nil, Options{}).Audit(ctx, 100)
			if len(recs) != instances*each {
				t.Errorf("%d audit records, want %d", len(recs), instances*each)
			}
		})
	}
}

// TestExpiry: an override with a ttl ends by itself at every instance;
// one record says so.
func TestExpiry(t *testing.T) {
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var a, b applied
			m1 := newManager(mk(), &a, Options{Resync: 20 * time.Millisecond})
			m2 := newManager(mk(), &b, Options{Resync: 20 * time.Millisecond})
			var wg sync.WaitGroup
			wg.Go(func() { m1.Run(ctx) })
			wg.Go(func() { m2.Run(ctx) })
			defer func() { cancel(); wg.Wait() }()
			if _, err := m1.Put(ctx, Change{Target: "a", Rule: "r", Rate: "1/s", TTL: 300 * time.Millisecond, Reason: "x", Author: "t"}); err != nil {
				t.Fatal(err)
			}
			if _, err := m1.SetDegrade(ctx, true, 300*time.Millisecond, "slow", "t"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "both instances apply the override", func() bool {
				return len(a.last().Overrides) == 1 && len(b.last().Overrides) == 1 && b.last().Degrade != nil
			})
			waitFor(t, "both instances see it expire", func() bool {
				return len(a.last().Overrides) == 0 && len(b.last().Overrides) == 0 && a.last().Degrade == nil && b.last().Degrade == nil
			})
			waitFor(t, "the expiry recorded once", func() bool {
				recs, _ := m1.Audit(ctx, 10)
				n := 0
				for _, r := range recs {
					if r.Action == "expire" || r.Action == "degrade_expire" {
						n++
					}
				}
				return n == 2 && len(recs) == 4
			})
		})
	}
}

// TestRedisLostState: a Redis that restarted without its data gets back
// the State the instances apply.
func TestRedisLostState(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartServer(t, "--save", "", "--appendonly", "no")
	prefix := redistest.KeyPrefix(t)
	var a applied
	m := newManager(NewRedisBackend(openRedis(t, []string{srv.Addr}, prefix)), &a, Options{})
	if _, err := m.Put(ctx, Change{Target: "a", Block: true, Reason: "x", Author: "t"}); err != nil {
		t.Fatal(err)
	}
	srv.Restart(t)
	waitFor(t, "Redis is back", func() bool { return m.Sync(ctx) == nil })
	if _, status := m.State(); status.Stale {
		t.Errorf("stale after a successful read: %+v", status)
	}
	st, _, err := NewRedisBackend(openRedis(t, []string{srv.Addr}, prefix)).Load(ctx)
	if err != nil || st.Version != 1 || len(st.Overrides) != 1 {
		t.Fatalf("after the restart Redis holds %+v (%v), want version 1 with the block", st, err)
	}
	if got := a.last(); len(got.Overrides) != 1 {
		t.Errorf("applied %+v", got)
	}
}

// TestChangeAfterRedisLostState: a change made on a Redis that restarted
// without its data, before any instance wrote its State back, is made to
// the State the instance applies, which it writes back with it: an
// override added then keeps the block already in force (a change made to
// the empty State would lift every other override on every instance), and
// removing that block finds it.
func TestChangeAfterRedisLostState(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartServer(t, "--save", "", "--appendonly", "no")
	prefix := redistest.KeyPrefix(t)
	m := newManager(NewRedisBackend(openRedis(t, []string{srv.Addr}, prefix)), nil, Options{})
	if _, err := m.Put(ctx, Change{Target: "a", Block: true, Reason: "x", Author: "t"}); err != nil {
		t.Fatal(err)
	}
	srv.Restart(t)
	waitFor(t, "Redis is back", func() bool {
		_, err := m.Put(ctx, Change{Target: "b", Block: true, Reason: "y", Author: "t"})
		return err == nil
	})
	st, _, err := NewRedisBackend(openRedis(t, []string{srv.Addr}, prefix)).Load(ctx)
	if err != nil || len(st.Overrides) != 2 || st.Version != 2 {
		t.Fatalf("after a change on the emptied Redis it holds %+v (%v), want version 2 with both blocks", st, err)
	}
	audit, err := m.Audit(ctx, 10)
	if err != nil || len(audit) == 0 || audit[0].Action != "restore" && audit[len(audit)-1].Action != "restore" {
		t.Errorf("audit %+v (%v), want the restore recorded", audit, err)
	}
	if _, err := m.Remove(ctx, "a", "", "t", "recovered"); err != nil {
		t.Errorf("removing the block kept across the restart: %v", err)
	}
}

// TestUnreachableKeepsLast: while the backend cannot be read, the State
// in force stays, and Status says so.
func TestUnreachableKeepsLast(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartServer(t)
	var a applied
	m := newManager(NewRedisBackend(openRedis(t, []string{srv.Addr}, redistest.KeyPrefix(t))), &a, Options{})
	if _, err := m.Put(ctx, Change{Target: "a", Block: true, Reason: "x", Author: "t"}); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := m.Sync(tctx); err == nil {
		t.Fatal("Sync with Redis stopped succeeded")
	}
	st, status := m.State()
	if len(st.Overrides) != 1 || !status.Stale || status.Error == "" || status.StaleSince.IsZero() {
		t.Errorf("state %+v status %+v, want the block kept and stale", st, status)
	}
	_, err := m.Put(tctx, Change{Target: "b", Block: true, Reason: "x", Author: "t"})
	var u *UnavailableError
	if !errors.As(err, &u) {
		t.Errorf("Put with Redis stopped: %v, want an UnavailableError", err)
	}
}

func TestFileBackendBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runtime.json")
	if err := writeAtomically(path, []byte("not json")); err != nil {
		t.Fatal(err)
	}
	_, _, err := NewFileBackend(path, nil).Load(context.Background())
	if err == nil || !strings.Contains(err.Error(), "is not sluice's runtime file") {
		t.Errorf("Load of a bad file: %v", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lostAnswer is a backend whose commits take but whose first commit's
// answer is lost, as on a connection a Redis restart breaks.
type lostAnswer struct {
	Backend
	lost bool
}

func (b *lostAnswer) Commit(ctx context.Context, prev uint64, next State, audit []Record, keep int) (bool, error) {
	ok, err := b.Backend.Commit(ctx, prev, next, audit, keep)
	if err == nil && !b.lost {
		b.lost = true
		return false, errors.New("EOF")
	}
	return ok, err
}

// TestRemoveAnswerLost: a removal whose commit took but whose answer was
// lost reports what it removed, not "nothing to remove" on its retry.
func TestRemoveAnswerLost(t *testing.T) {
	ctx := context.Background()
	file := NewFileBackend(filepath.Join(t.TempDir(), "runtime.json"), nil)
	if _, err := newManager(file, nil, Options{}).Put(ctx, Change{Target: "a", Block: true, Reason: "r", Author: "t"}); err != nil {
		t.Fatal(err)
	}
	m := newManager(&lostAnswer{Backend: file}, nil, Options{})
	gone, err := m.Remove(ctx, "a", "", "t", "done")
	if err != nil || len(gone) != 1 {
		t.Fatalf("Remove with its answer lost: %v %v, want the block removed", gone, err)
	}
	if st, _, _ := file.Load(ctx); len(st.Overrides) != 0 || st.Version != 2 {
		t.Errorf("stored %+v, want the block gone at version 2", st)
	}
}
