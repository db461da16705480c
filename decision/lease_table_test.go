package decision_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// The lease tables: a concurrency rule takes an in-flight slot at
// admission (the memory store's Leaser) and gives it back when the
// response ends; a full rule refuses with 429. httplimit/lease_test.go
// and concurrency_test.go check the same through net/http.

// inFlightPolicy is partners with claims at 100 a minute and
// partner-in-flight: 2 in flight per client, plan large 3.
func inFlightPolicy() policy.Policy {
	p := partners()
	p.Rules[0].Rate = rate(100, time.Minute)
	p.Rules = append(p.Rules, policy.Rule{Name: "partner-in-flight", Match: policy.Match{Path: "/claims"}, Concurrency: 2})
	p.Plans["large"] = policy.Plan{Limits: p.Plans["large"].Limits, Concurrency: map[string]int64{"partner-in-flight": 3}}
	return p
}

// inFlight is how many slots client holds of rule in the memory store.
func (r *rig) inFlight(client, rule string) int64 {
	r.t.Helper()
	key := store.GroupKey(store.Parts("client", client), rule, "concurrency")
	d, err := r.mem.Acquire(context.Background(), key, store.Concurrency{Max: 1000}, r.clock.Now(), 0)
	if err != nil {
		r.t.Fatal(err)
	}
	return d.InFlight
}

var answeredOK = &decision.Response{Passed: true, Status: 200}

// TestConcurrencyTable: partner-a's third request while two are in
// flight is refused, 429 naming what it exceeded; partner-b (plan large,
// 3) is not; once the responses end the slots are back.
func TestConcurrencyTable(t *testing.T) {
	r := newRig(t, inFlightPolicy())
	a1, _ := r.hold(call{key: "key-a"})
	a2, _ := r.hold(call{key: "key-a"})
	s := r.do(call{key: "key-a"})
	want(t, s, 429, "a third in flight")
	if got, w := s.detail(), "partner-a exceeded 2 requests in flight (rule partner-in-flight); retry in 1s"; got != w {
		t.Errorf("detail %q, want %q", got, w)
	}
	if !slices.Equal(s.violated(), []string{"partner-in-flight"}) || s.fields["Retry-After"] != "1" {
		t.Errorf("violated %q, Retry-After %q; want partner-in-flight, 1", s.violated(), s.fields["Retry-After"])
	}
	if got, w := s.fields["Ratelimit-Policy"], `"claims";q=100;w=60, "partner-in-flight";q=2;qu="concurrent-requests"`; got != w {
		t.Errorf("RateLimit-Policy %q, want %q", got, w)
	}
	if got, w := s.fields["Ratelimit"], `"claims";r=97;t=60, "partner-in-flight";r=0`; got != w {
		t.Errorf("RateLimit %q, want %q", got, w)
	}
	if s.rep.Status != 429 || s.rep.Counted != "partner-a" || s.rule(t, "partner-in-flight").Outcome != decision.Limited {
		t.Errorf("report %+v", s.rep)
	}
	b, sb := r.hold(call{key: "key-b"})
	if d := sb.rule(t, "partner-in-flight").Decision; d.Limit != 3 || d.Remaining != 2 {
		t.Errorf("partner-b: %+v, want limit 3, 2 left", d)
	}
	if n := r.inFlight("partner-a", "partner-in-flight"); n != 2 {
		t.Errorf("partner-a holds %d slots, want 2", n)
	}
	for _, v := range []*decision.Verdict{a1, a2, b} {
		v.Finish(answeredOK)
	}
	if n := r.inFlight("partner-a", "partner-in-flight"); n != 0 {
		t.Fatalf("partner-a holds %d slots after its responses, want 0", n)
	}
	s = r.do(call{key: "key-a"})
	want(t, s, 0, "after the responses")
	if got := s.fields["Ratelimit"]; got != `"claims";r=96;t=60, "partner-in-flight";r=1` {
		t.Errorf("RateLimit %q: the 429 counted against claims, one slot of 2 in use", got)
	}
}

// TestLeaseGivenBackTable: every way a request ends gives its slot
// back: refused by the rate rule before it took one, refused by a later
// concurrency rule after the first gave one, a shadow rule over its
// limit, a response the caller aborted or that has none.
func TestLeaseGivenBackTable(t *testing.T) {
	t.Run("rate refusal takes none", func(t *testing.T) {
		p := inFlightPolicy()
		p.Rules[0].Rate = rate(1, time.Minute)
		r := newRig(t, p)
		want(t, r.do(call{key: "key-a"}), 0, "first")
		s := r.do(call{key: "key-a"})
		want(t, s, 429, "over claims")
		if !slices.Equal(s.violated(), []string{"claims"}) || s.rule(t, "partner-in-flight").Outcome != decision.NotSpent {
			t.Errorf("violated %q, outcomes %v; want claims, partner-in-flight not_spent", s.violated(), s.outcomes())
		}
		if n := r.inFlight("partner-a", "partner-in-flight"); n != 0 {
			t.Errorf("a request the rate refused holds %d slots, want 0", n)
		}
	})
	t.Run("a later full rule", func(t *testing.T) {
		p := inFlightPolicy()
		p.Rules = append(p.Rules, policy.Rule{Name: "all-in-flight", Key: policy.KeySpec{Kind: policy.KeyGlobal}, Concurrency: 1})
		r := newRig(t, p)
		a, _ := r.hold(call{key: "key-a"})
		s := r.do(call{key: "key-b"})
		want(t, s, 429, "all-in-flight full")
		if o := s.outcomes(); o["partner-in-flight"] != decision.NotSpent || o["all-in-flight"] != decision.Limited {
			t.Errorf("outcomes %v, want partner-in-flight not_spent, all-in-flight limited", o)
		}
		if n := r.inFlight("partner-b", "partner-in-flight"); n != 0 {
			t.Errorf("partner-b holds %d slots of partner-in-flight after its 429, want 0", n)
		}
		a.Finish(answeredOK)
	})
	t.Run("shadow", func(t *testing.T) {
		p := inFlightPolicy()
		p.Rules[1].Mode = policy.Shadow
		r := newRig(t, p)
		var held []*decision.Verdict
		var last seen
		for range 3 {
			v, s := r.hold(call{key: "key-a"})
			held, last = append(held, v), s
		}
		if last.rep.Status != 0 || last.rule(t, "partner-in-flight").Outcome != decision.ShadowLimited {
			t.Errorf("report %+v, want passed, shadow_limited", last.rep)
		}
		for _, v := range held {
			v.Finish(answeredOK)
		}
		if n := r.inFlight("partner-a", "partner-in-flight"); n != 0 {
			t.Errorf("%d slots held after the responses, want 0", n)
		}
	})
	for name, resp := range map[string]*decision.Response{
		"aborted":     {Passed: true, Status: 200, Aborted: true},
		"unanswered":  {Passed: true, Aborted: true, Unanswered: true},
		"no response": nil,
	} {
		t.Run(name, func(t *testing.T) {
			var errs []error
			var mu sync.Mutex
			r := newRig(t, inFlightPolicy(), func(o *decision.Options) {
				o.Leaser = ctxLeaser{Leaser: r1(o), released: func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }}
			})
			ctx, cancel := context.WithCancel(context.Background())
			v := r.e.Decide(ctx, r.set, call{key: "key-a"}.request())
			if !v.Pass {
				t.Fatalf("refused %d", v.Status)
			}
			cancel() // the caller has left: the slot is given back all the same
			v.Finish(resp)
			if n := r.inFlight("partner-a", "partner-in-flight"); n != 0 {
				t.Errorf("%d slots held after the request ended, want 0", n)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(errs) != 1 || errs[0] != nil {
				t.Errorf("release contexts' errors %v, want one nil", errs)
			}
		})
	}
}

// r1 is the store a rig gave its Options, as a Leaser.
func r1(o *decision.Options) store.Leaser { return o.Store.(store.Leaser) }

// ctxLeaser reports the context error each Release sees.
type ctxLeaser struct {
	store.Leaser
	released func(error)
}

func (c ctxLeaser) Release(ctx context.Context, l store.Lease, now time.Time) error {
	c.released(ctx.Err())
	return c.Leaser.Release(ctx, l, now)
}

var errLeaserDown = errors.New("leaser down")

// failingLeaser fails every Acquire.
type failingLeaser struct{ store.Leaser }

func (failingLeaser) Acquire(context.Context, store.Key, store.Concurrency, time.Time, int64) (store.LeaseDecision, error) {
	return store.LeaseDecision{}, errLeaserDown
}

// TestLeaserFailsTable: a Leaser that fails admits without a lease
// (fail open, reported failed) or refuses with 503 (fail closed).
func TestLeaserFailsTable(t *testing.T) {
	for _, tc := range []struct {
		policy store.FailurePolicy
		status int
	}{{store.FailOpen, 0}, {store.FailClosed, 503}} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			r := newRig(t, inFlightPolicy(), func(o *decision.Options) {
				o.Leaser, o.OnFailure = failingLeaser{r1(o)}, tc.policy
			})
			s := r.do(call{key: "key-a"})
			want(t, s, tc.status, "the Leaser down")
			if !errors.Is(s.rep.Err, errLeaserDown) || s.rule(t, "partner-in-flight").Outcome != decision.Failed {
				t.Errorf("report %+v, want the Leaser's error, partner-in-flight failed", s.rep)
			}
		})
	}
}

// TestConcurrentLeasesTable: 64 goroutines hold requests of one client
// at once: exactly the client's 3 slots are taken, the rest refused, and
// all are back once every request ended.
func TestConcurrentLeasesTable(t *testing.T) {
	r := newRig(t, inFlightPolicy())
	var passed, limited atomic.Int64
	var mu sync.Mutex
	var held []*decision.Verdict
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			v := r.e.Decide(context.Background(), r.set, call{key: "key-b"}.request())
			if !v.Pass {
				limited.Add(1)
				v.Finish(nil)
				return
			}
			passed.Add(1)
			mu.Lock()
			held = append(held, v)
			mu.Unlock()
		})
	}
	wg.Wait()
	if passed.Load() != 3 || limited.Load() != 61 {
		t.Errorf("passed %d, limited %d; want 3, 61", passed.Load(), limited.Load())
	}
	for _, v := range held {
		v.Finish(answeredOK)
	}
	if n := r.inFlight("partner-b", "partner-in-flight"); n != 0 {
		t.Errorf("%d slots held after every request ended, want 0", n)
	}
}
