package live_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/live"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store/memory"
)

// sim is a gateway in small, on a fake clock: a real decision engine over
// a memory store, its reports observed by a Live. Its policy: claims, 10
// a minute per client on /claims; per-ip, 10 a minute per address on
// /shared.
type sim struct {
	t   *testing.T
	clk *clock.Fake
	e   *decision.Engine
	pol *policy.Compiled
	l   *live.Live
}

func newSim(t *testing.T, opts live.Options) *sim {
	pol, err := policy.Compile(policy.Policy{
		Clients: policy.Clients{Unknown: policy.UnknownAnonymous, List: []policy.Client{
			{ID: "partner-a", Keys: []string{"key-a"}}, {ID: "partner-b", Keys: []string{"key-b"}}, {ID: "partner-c", Keys: []string{"key-c"}}}},
		Rules: []policy.Rule{
			{Name: "claims", Match: policy.Match{Path: "/claims"}, Key: policy.KeySpec{Kind: policy.KeyClient},
				Algorithm: limiter.SlidingWindow, Rate: policy.Rate{N: 10, Period: time.Minute}},
			{Name: "per-ip", Match: policy.Match{Path: "/shared"}, Key: policy.KeySpec{Kind: policy.KeyIP},
				Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 10, Period: time.Minute}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &sim{t: t, clk: clock.NewFake(epoch), pol: pol, l: live.New(pol, opts)}
	mem := memory.New(memory.Options{Clock: s.clk})
	t.Cleanup(func() { _ = mem.Close() })
	s.e, err = decision.New(decision.Options{Store: mem, Clock: s.clk,
		OnDecision: func(_ *decision.Request, rep *decision.Report) { s.l.Observe(s.clk.Now(), rep) }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// send sends one request of the caller with key from addr and returns its
// status (0: passed) and Retry-After in seconds.
func (s *sim) send(path, key, addr string) (status int, retry time.Duration) {
	v := s.e.Decide(context.Background(), decision.Settings{Policy: s.pol}, decision.Request{Method: "GET", Path: path,
		Peer: netip.AddrPortFrom(netip.MustParseAddr(addr), 1234), Header: hdr{"X-Api-Key": {key}}})
	for _, f := range v.Header {
		if f.Name == "Retry-After" {
			n, _ := strconv.Atoi(string(f.Value))
			retry = time.Duration(n) * time.Second
		}
	}
	status = v.Status
	v.Finish(&decision.Response{Passed: v.Pass, Status: 200})
	return status, retry
}

// program is a partner's program: it sends a request every `every`; when
// refused, it waits what Retry-After says if it obeys, or goes on as if
// nothing happened.
type program struct {
	path, key, addr string
	every           time.Duration
	obeys           bool
	next            time.Time
}

// run steps the clock a second at a time for d, each caller sending when
// its time has come.
func (s *sim) run(d time.Duration, callers ...*program) {
	end := s.clk.Now().Add(d)
	for ; s.clk.Now().Before(end); s.clk.Advance(time.Second) {
		now := s.clk.Now()
		for _, c := range callers {
			if now.Before(c.next) {
				continue
			}
			c.next = now.Add(c.every)
			if status, retry := s.send(c.path, c.key, c.addr); status == 429 && c.obeys {
				c.next = now.Add(retry)
			}
		}
	}
}

// findings returns the snapshot's findings as "kind rule clients@address".
func (s *sim) findings(in live.Inputs) []string {
	var got []string
	for _, f := range s.l.Snapshot(s.clk.Now(), in).Findings {
		if f.Detail == "" || f.Evidence == nil || f.Clients == nil {
			s.t.Errorf("finding %+v lacks its detail, evidence or clients", f)
		}
		got = append(got, fmt.Sprintf("%s %s %s@%s", f.Kind, f.Rule, strings.Join(f.Clients, ","), f.Address))
	}
	return got
}

func (s *sim) want(in live.Inputs, want ...string) {
	s.t.Helper()
	if got := s.findings(in); !slices.Equal(got, want) {
		s.t.Errorf("at +%v findings %q, want %q", s.clk.Now().Sub(epoch), got, want)
	}
}

// A caller that keeps sending before its Retry-After retries too soon; one
// that waits as told and is refused again window after window has a limit
// too low. Neither is reported as the other.
func TestFindingsRetriesAndLimit(t *testing.T) {
	s := newSim(t, live.Options{})
	a := &program{path: "/claims", key: "key-a", addr: "192.0.2.1", every: time.Second}              // ignores Retry-After
	b := &program{path: "/claims", key: "key-b", addr: "192.0.2.2", every: time.Second, obeys: true} // waits as told
	s.run(40*time.Second, a, b)
	s.want(live.Inputs{}, "retries_too_soon claims partner-a@") // b: refused once, in one window
	s.run(5*time.Minute, a, b)
	s.want(live.Inputs{}, "retries_too_soon claims partner-a@", "limit_too_low claims partner-b@")
	f := s.l.Snapshot(s.clk.Now(), live.Inputs{}).Findings
	if ev := f[0].Evidence; ev["early"].(uint64) < 200 || ev["since"] == nil || ev["last"] == nil ||
		!strings.Contains(f[0].Detail, "partner-a sent") || !strings.Contains(f[0].Detail, "before its Retry-After in the last 10m (rule claims)") {
		t.Errorf("retries_too_soon %+v", f[0])
	}
	if ev := f[1].Evidence; ev["early"].(uint64) != 0 || ev["windows"].(uint64) < live.MinWindows || !strings.Contains(f[1].Detail, "more than 10 per 1m") {
		t.Errorf("limit_too_low %+v", f[1])
	}
	// Both stop: the findings leave once the period has passed.
	s.clk.Advance(5 * time.Minute)
	s.want(live.Inputs{}, "retries_too_soon claims partner-a@", "limit_too_low claims partner-b@")
	s.clk.Advance(6 * time.Minute)
	s.want(live.Inputs{})
}

// Precision: a caller that reaches its limit once, or retries a few
// times at once and then waits, is no finding; one that ignores
// Retry-After slowly (a few early requests a window) is never limit_too_low.
func TestFindingsNegative(t *testing.T) {
	t.Run("once", func(t *testing.T) {
		s := newSim(t, live.Options{})
		for range 12 { // 10 pass, 2 refused at once
			s.send("/claims", "key-a", "192.0.2.1")
		}
		s.run(10*time.Minute, &program{path: "/claims", key: "key-a", addr: "192.0.2.1", every: 10 * time.Second, obeys: true})
		s.want(live.Inputs{})
	})
	t.Run("a few retries", func(t *testing.T) {
		s := newSim(t, live.Options{})
		for range 2 { // in two windows: 10 pass, then 5 retries at once, then a wait
			for range 15 {
				s.send("/claims", "key-a", "192.0.2.1")
			}
			s.clk.Advance(2 * time.Minute)
		}
		s.want(live.Inputs{})
	})
	t.Run("ignores slowly", func(t *testing.T) {
		s := newSim(t, live.Options{})
		// per-ip: a fixed window of 10 a minute; 15 a minute, never waiting:
		// 10 pass, then 1 refused after its window's wait and 4 early.
		a := &program{path: "/shared", key: "key-a", addr: "192.0.2.1", every: 4 * time.Second}
		for range 10 {
			s.run(time.Minute, a)
			for _, f := range s.findings(live.Inputs{}) {
				if strings.HasPrefix(f, "limit_too_low") {
					t.Fatalf("at +%v: %s for a caller that ignores Retry-After", s.clk.Now().Sub(epoch), f)
				}
			}
		}
		s.want(live.Inputs{}, "retries_too_soon per-ip partner-a@192.0.2.1")
	})
	t.Run("ignores, then paced by luck", func(t *testing.T) {
		// claims: a sliding window of 10 a minute; 15 a minute, never
		// waiting. Its first window's Retry-Afters (21s, 17s, ...) are
		// longer than its pace: 5 early requests, too few to retry too
		// soon; after that they are 1s, and it is early no more. It was
		// early in this period or the one before: never limit_too_low.
		s := newSim(t, live.Options{})
		a := &program{path: "/claims", key: "key-a", addr: "192.0.2.1", every: 4 * time.Second}
		for range 19 {
			s.run(time.Minute, a)
			s.want(live.Inputs{})
		}
	})
	t.Run("obeys, at its limit", func(t *testing.T) {
		s := newSim(t, live.Options{})
		s.run(10*time.Minute, &program{path: "/claims", key: "key-b", addr: "192.0.2.2", every: 6 * time.Second, obeys: true}) // 10 a minute: never refused
		s.want(live.Inputs{})
	})
}

// Several clients refused on one address counter share it; one client
// refused on its address, or clients on addresses of their own, do not.
func TestFindingsSharedAddress(t *testing.T) {
	s := newSim(t, live.Options{})
	s.run(2*time.Minute, &program{path: "/shared", key: "key-c", addr: "192.0.2.9", every: 2 * time.Second, obeys: true},
		&program{path: "/shared", key: "key-b", addr: "192.0.2.8", every: 2 * time.Second, obeys: true})
	s.want(live.Inputs{}) // each alone on its address
	s.run(2*time.Minute, &program{path: "/shared", key: "key-a", addr: "192.0.2.7", every: 2 * time.Second, obeys: true},
		&program{path: "/shared", key: "key-b", addr: "192.0.2.7", every: 2 * time.Second, obeys: true})
	s.want(live.Inputs{}, "shared_address per-ip partner-a,partner-b@192.0.2.7")
	f := s.l.Snapshot(s.clk.Now(), live.Inputs{}).Findings[0]
	if !strings.Contains(f.Detail, "partner-a and partner-b were refused on one counter of address 192.0.2.7") {
		t.Errorf("detail %q", f.Detail)
	}
	s.clk.Advance(11 * time.Minute)
	s.want(live.Inputs{})
}

// The store degraded under on_failure open or local is separate_counters
// for the period; under closed it is not (nothing is counted apart).
// Instances that apply different versions of a rule are, too.
func TestFindingsSeparateCounters(t *testing.T) {
	s := newSim(t, live.Options{Period: 5 * time.Minute})
	for range 30 {
		s.l.Sample(s.clk.Now(), live.Sample{StoreDegraded: true})
		s.clk.Advance(time.Second)
	}
	s.l.Sample(s.clk.Now(), live.Sample{})
	s.want(live.Inputs{OnFailure: "open"}, "separate_counters  @")
	s.want(live.Inputs{OnFailure: "closed"})
	f := s.l.Snapshot(s.clk.Now(), live.Inputs{OnFailure: "local"}).Findings[0]
	if f.Evidence["seconds"].(uint64) != 30 || !strings.Contains(f.Detail, "unreachable for 30s in the last 5m (on_failure local)") {
		t.Errorf("degraded finding %+v", f)
	}
	s.clk.Advance(6 * time.Minute)
	s.want(live.Inputs{OnFailure: "open"})

	same := []live.Instance{{ID: "i1", Version: "aa", Rules: map[string]string{"claims": "1", "per-ip": "2"}},
		{ID: "i2", Version: "bb", Rules: map[string]string{"claims": "1", "per-ip": "2"}}}
	s.want(live.Inputs{Instances: same}) // versions differ elsewhere, not in a rule
	differ := []live.Instance{same[0], {ID: "i2", Version: "bb", Rules: map[string]string{"claims": "9", "per-ip": "2"}}}
	s.want(live.Inputs{Instances: differ}, "separate_counters claims @")
	whole := []live.Instance{{ID: "i1", Version: "aa"}, {ID: "i2", Version: "bb"}}
	s.want(live.Inputs{Instances: whole}, "separate_counters  @")
	s.want(live.Inputs{Instances: whole[:1]})
}
