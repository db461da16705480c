package live_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/live"
	"github.com/sluice-rl/sluice/policy"
)

// The most refused and the closest to their limit are listed, most
// limited first, with what each did in the last minute; the rule's
// totals count every caller.
func TestTopLists(t *testing.T) {
	l := live.New(testPolicy(t), live.Options{})
	now := epoch
	for i := range 100 {
		l.Observe(now, report("partner-a", 20*time.Second, allowed("ka", int64(99-i))))
	}
	for range 40 {
		l.Observe(now, report("partner-a", 20*time.Second, limited("ka")))
	}
	for i := range 97 {
		l.Observe(now, report("partner-b", 0, allowed("kb", int64(99-i))))
	}
	l.Observe(now, report("partner-c", 0, allowed("kc", 95)))
	now = now.Add(3 * time.Second)
	s := l.Snapshot(now, live.Inputs{})
	claims := rule(t, s, "claims")
	if claims.Allowed != 198 || claims.Limited != 40 || claims.Limit != 100 || claims.WindowS != 60 ||
		claims.Algorithm != "sliding_window" || claims.Key != "client" || claims.Mode != "enforce" {
		t.Errorf("claims %+v", claims.RuleInfo)
		t.Errorf("claims allowed %d limited %d, want 198 and 40", claims.Allowed, claims.Limited)
	}
	if len(claims.Top) != 3 || claims.Top[0].Client != "partner-a" || claims.Top[1].Client != "partner-b" || claims.Top[2].Client != "partner-c" {
		t.Fatalf("top %+v, want partner-a, partner-b, partner-c", claims.Top)
	}
	a, b := claims.Top[0], claims.Top[1]
	if a.Limited != 40 || a.Allowed != 100 || a.RetryS != 17 || a.Limit != 100 {
		t.Errorf("partner-a %+v, want 100 allowed, 40 limited, retry in 17s", a)
	}
	// 97% used 3s ago, back at full limit 60s after: 0.97 × 57/60.
	if want := 0.97 * 57 / 60; b.Used < want-0.001 || b.Used > want+0.001 || b.RetryS != 0 {
		t.Errorf("partner-b used %v retry %d, want %.3f and none", b.Used, b.RetryS, want)
	}
	if v := rule(t, s, "per-ip"); len(v.Top) != 0 || v.Allowed != 0 || v.Limit != 10 {
		t.Errorf("per-ip %+v, want nothing seen", v)
	}
	// A minute on, the last minute is empty; the listed callers stay.
	s = l.Snapshot(now.Add(time.Minute), live.Inputs{})
	claims = rule(t, s, "claims")
	if claims.Allowed != 0 || claims.Limited != 0 || claims.Top[0].Limited != 0 || len(claims.Top) != 3 {
		t.Errorf("a minute later: %+v", claims)
	}
}

// History has a point a second for the last five minutes, oldest first.
func TestHistory(t *testing.T) {
	l := live.New(testPolicy(t), live.Options{})
	l.Observe(epoch, report("partner-a", time.Second, limited("ka")))
	l.Observe(epoch.Add(time.Second), report("partner-a", 0, allowed("ka", 5)))
	l.Sample(epoch.Add(time.Second), live.Sample{InFlight: 3, Limit: 40, Ceiling: 200})
	s := l.Snapshot(epoch.Add(10*time.Second), live.Inputs{})
	if len(s.History) != 300 {
		t.Fatalf("%d points, want 300", len(s.History))
	}
	last := s.History[len(s.History)-1]
	if last.T != epoch.Unix()+10 || s.History[0].T != epoch.Unix()+10-299 {
		t.Errorf("points from %d to %d, want %d to %d", s.History[0].T, last.T, epoch.Unix()-289, epoch.Unix()+10)
	}
	p0, p1 := s.History[len(s.History)-11], s.History[len(s.History)-10]
	if p0.Rules["claims"] != (live.RuleSecond{Limited: 1}) || p1.Rules["claims"] != (live.RuleSecond{Allowed: 1}) {
		t.Errorf("seconds %+v %+v", p0, p1)
	}
	if p1.InFlight != 3 || p1.Limit != 40 || p1.Ceiling != 200 || p0.InFlight != 0 {
		t.Errorf("protect samples %+v %+v", p0, p1)
	}
	if _, ok := p0.Rules["per-ip"]; !ok {
		t.Errorf("point %+v lacks per-ip", p0)
	}
}

// Space-Saving keeps a counter refused more than 1/Top of the time listed
// under a flood of counters refused once each.
func TestRefusalsSketchKeepsHeavy(t *testing.T) {
	l := live.New(testPolicy(t), live.Options{Top: 10})
	now := epoch
	for i := range 10_000 {
		if i%5 == 0 {
			l.Observe(now, report("partner-a", time.Second, limited("heavy")))
		}
		l.Observe(now, report("anonymous", time.Second, limited(fmt.Sprint("flood", i))))
	}
	v := rule(t, l.Snapshot(now, live.Inputs{}), "claims")
	if len(v.Top) > 20 {
		t.Errorf("%d listed, want at most 2×Top", len(v.Top))
	}
	if c, ok := caller(v, "partner-a"); !ok || v.Top[0].Client != "partner-a" || c.Limited < 1000 {
		t.Errorf("heavy %+v (listed %v) in %+v, want first with its refusals counted since it was listed", c, ok, v.Top)
	}
}

// The used sketch lists the Top highest shares used; one higher takes the
// place of the lowest, a lower one is not listed.
func TestUsedSketch(t *testing.T) {
	l := live.New(testPolicy(t), live.Options{Top: 3})
	for i, rem := range []int64{90, 50, 20, 70} { // used 0.1, 0.5, 0.8, 0.3
		l.Observe(epoch, report(fmt.Sprint("c", i), 0, allowed(fmt.Sprint("k", i), rem)))
	}
	l.Observe(epoch, report("c4", 0, allowed("k4", 95))) // 0.05: lower than all
	v := rule(t, l.Snapshot(epoch, live.Inputs{}), "claims")
	var got []string
	for _, c := range v.Top {
		got = append(got, fmt.Sprintf("%s=%.2f", c.Client, c.Used))
	}
	if strings.Join(got, " ") != "c2=0.80 c1=0.50 c3=0.30" {
		t.Errorf("listed %v, want c2, c1, c3", got)
	}
	// A second on, c0 comes back at 0.9: it takes the place of the lowest.
	l.Observe(epoch.Add(time.Second), report("c0", 0, allowed("k0", 10)))
	v = rule(t, l.Snapshot(epoch.Add(time.Second), live.Inputs{}), "claims")
	if _, ok := caller(v, "c3"); ok || len(v.Top) != 3 || v.Top[0].Client != "c0" {
		t.Errorf("after c0 at 0.9: %+v, want c0 first and c3 gone", v.Top)
	}
}

// A reload keeps what was seen of a rule that counts as before, starts a
// changed one afresh, and ignores reports of the old policy whose index
// now names another rule.
func TestSetPolicy(t *testing.T) {
	pol := testPolicy(t)
	l := live.New(pol, live.Options{})
	l.Observe(epoch, report("partner-a", time.Second, limited("ka"), result{rule: 1, key: "ip1", outcome: decision.Limited, limit: 10}))
	p := pol.Policy()
	p.Rules = []policy.Rule{p.Rules[1], p.Rules[0]} // swapped: per-ip is 0, claims 1
	p.Rules[0].Algorithm = limiter.GCRA
	next, err := policy.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	l.SetPolicy(next)
	s := l.Snapshot(epoch, live.Inputs{})
	if s.Rules[0].Name != "per-ip" || len(s.Rules[0].Top) != 0 || s.Rules[0].Limited != 0 {
		t.Errorf("per-ip, its algorithm changed: %+v, want it empty", s.Rules[0])
	}
	if s.Rules[1].Name != "claims" || len(s.Rules[1].Top) != 1 || s.Rules[1].Limited != 1 {
		t.Errorf("claims, unchanged: %+v, want its caller kept", s.Rules[1])
	}
	l.Observe(epoch, report("partner-a", time.Second, limited("ka"))) // old index 0, now per-ip
	if s := l.Snapshot(epoch, live.Inputs{}); s.Rules[0].Limited != 0 || s.Rules[1].Limited != 1 {
		t.Errorf("a report of the old policy was counted: %+v", s.Rules)
	}
}

// Observing a listed counter allocates nothing, allowed or limited.
func TestObserveAllocs(t *testing.T) {
	l := live.New(testPolicy(t), live.Options{})
	ok := report("partner-a", 0, allowed("ka", 50), result{rule: 1, key: "ip1", outcome: decision.Allowed, limit: 10, remaining: 5})
	no := report("partner-a", 3*time.Second, limited("ka"))
	now := epoch
	l.Observe(now, ok)
	l.Observe(now, no)
	if n := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		l.Observe(now, ok)
		l.Observe(now, no)
	}); n != 0 {
		t.Errorf("%v allocations per Observe pair, want 0", n)
	}
}

// A flood of a million counters, each refused once, leaves the heap
// bounded: each rule lists at most 2×Top.
func TestFloodBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a million observations")
	}
	l := live.New(testPolicy(t), live.Options{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	now := epoch
	keys := make([]byte, 0, 32)
	for i := range 1_000_000 {
		if i%1000 == 0 {
			now = now.Add(time.Millisecond)
		}
		keys = fmt.Appendf(keys[:0], "client:%d", i)
		l.Observe(now, report("anonymous", time.Second, limited(string(keys)), result{rule: 1, key: string(keys), outcome: decision.Allowed, limit: 10, remaining: int64(i % 10)}))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap before %d, after %d: grew %d bytes for 1M counters", before.HeapAlloc, after.HeapAlloc, grew)
	if grew > 4<<20 {
		t.Errorf("heap grew %d bytes, want under 4 MiB (2 rules × 200 entries)", grew)
	}
	s := l.Snapshot(now, live.Inputs{})
	for _, v := range s.Rules {
		if len(v.Top) > 2*live.DefaultTop {
			t.Errorf("rule %s lists %d, want at most %d", v.Name, len(v.Top), 2*live.DefaultTop)
		}
	}
	runtime.KeepAlive(l)
}

// Observe and Snapshot run at once on many goroutines (run with -race).
func TestConcurrent(t *testing.T) {
	l := live.New(testPolicy(t), live.Options{Top: 5})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				now := epoch.Add(time.Duration(i) * time.Millisecond)
				key := fmt.Sprint("k", (g*7+i)%20)
				l.Observe(now, report(key, time.Second, limited(key), result{rule: 1, key: "ip", outcome: decision.Allowed, limit: 10, remaining: 3}))
				l.Observe(now, report(key, 0, allowed(key, int64(i%100))))
			}
		})
	}
	wg.Go(func() {
		for i := range 50 {
			s := l.Snapshot(epoch.Add(time.Duration(i)*40*time.Millisecond), live.Inputs{})
			if _, err := json.Marshal(s); err != nil {
				t.Error(err)
			}
			l.Sample(epoch.Add(time.Duration(i)*time.Second), live.Sample{InFlight: i})
		}
	})
	wg.Wait()
	s := l.Snapshot(epoch.Add(2*time.Second), live.Inputs{})
	if v := rule(t, s, "claims"); v.Allowed+v.Limited != 16000 || len(v.Top) > 10 {
		t.Errorf("claims counted %d (want 16000), lists %d (want ≤ 10)", v.Allowed+v.Limited, len(v.Top))
	}
}
