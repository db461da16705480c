package decision_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/throttle"
)

// classes is a policy of one rule per kind of request Pressure tells
// apart: /exports degrades (at high priority: degrade wins), /reports is
// low, /claims normal (a rate rule setting no priority), /health
// critical; /bulk is low on its rule, raised to normal by the plan of
// partner-p.
func classes(t testing.TB) *policy.Compiled {
	t.Helper()
	c, err := policy.Compile(policy.Policy{
		Clients: policy.Clients{List: []policy.Client{
			{ID: "partner-a", Keys: []string{"key-a"}},
			{ID: "partner-p", Keys: []string{"key-p"}, Plan: "priority"},
		}},
		Plans: map[string]policy.Plan{"priority": {Priority: new(throttle.Normal)}},
		Rules: []policy.Rule{
			{Name: "exports", Match: policy.Match{Path: "/exports"}, Priority: new(throttle.High), Degrade: true},
			{Name: "reports", Match: policy.Match{Path: "/reports"}, Priority: new(throttle.Low)},
			{Name: "bulk", Match: policy.Match{Path: "/bulk"}, Priority: new(throttle.Low)},
			{Name: "health", Match: policy.Match{Path: "/health"}, Priority: new(throttle.Critical)},
			{Name: "claims", Match: policy.Match{Path: "/claims"}, Key: policy.KeySpec{Kind: policy.KeyClient},
				Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 1000, Period: time.Minute}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// While a Pressure is on, with or without a Throttle (one far from its
// shed line), a degrade rule's request is refused 503 degraded and a low
// one 503 shed, each with Retry-After and a detail naming the sources;
// normal and critical requests, and a low rule's raised by its plan, pass
// as before. Off again, everything passes. The refusals are reported as
// the throttle's would be, without Throttled.
func TestPressure(t *testing.T) {
	type want struct {
		status int
		reason string
	}
	pass, degraded, shed := want{0, ""}, want{503, "degraded"}, want{503, "shed"}
	rows := []struct {
		path, key string
		on        want
		priority  throttle.Priority
	}{
		{"/exports", "key-a", degraded, throttle.High},
		{"/reports", "key-a", shed, throttle.Low},
		{"/bulk", "key-a", shed, throttle.Low},
		{"/bulk", "key-p", pass, throttle.Normal},
		{"/claims/7", "key-a", pass, throttle.Normal},
		{"/health", "key-a", pass, throttle.Critical},
	}
	for _, withThrottle := range []bool{false, true} {
		t.Run(fmt.Sprintf("throttle=%v", withThrottle), func(t *testing.T) {
			pol := classes(t)
			var reports []decision.Report
			e := engine(t, nil, func(o *decision.Options) {
				o.OnDecision = func(_ *decision.Request, r *decision.Report) { reports = append(reports, *r) }
			})
			p := new(decision.Pressure)
			set := decision.Settings{Policy: pol, Pressure: p}
			if withThrottle {
				thr, err := throttle.New(throttle.Config{MaxInFlight: 100})
				if err != nil {
					t.Fatal(err)
				}
				set.Throttle = thr
			}
			check := func(phase string, on bool) {
				for _, r := range rows {
					w := pass
					if on {
						w = r.on
					}
					reports = reports[:0]
					a := decideUnder(t, e, set, get(r.path, hdr{"X-Api-Key": {r.key}}))
					reason, _ := a.body["reason"].(string)
					if a.status != w.status || reason != w.reason {
						t.Errorf("%s: %s as %s: %d %q, want %d %q", phase, r.path, r.key, a.status, reason, w.status, w.reason)
					}
					rep := reports[0]
					if w.status == 0 {
						if rep.Throttled != withThrottle || rep.Refusal != throttle.ReasonNone {
							t.Errorf("%s: %s report throttled %v refusal %v, want %v none", phase, r.path, rep.Throttled, rep.Refusal, withThrottle)
						}
						continue
					}
					detail, _ := a.body["detail"].(string)
					if a.fields["Retry-After"] != "30" || !strings.Contains(detail, "while the service is degraded (signal:grid-carbon, switch); retry in 30s") {
						t.Errorf("%s: %s: Retry-After %q detail %q", phase, r.path, a.fields["Retry-After"], detail)
					}
					if rep.Throttled || rep.Status != 503 || rep.Priority != r.priority || rep.Refusal.String() != w.reason || rep.RetryAfter != 30*time.Second {
						t.Errorf("%s: %s report %+v, want 503 at %v, refusal %s, not throttled", phase, r.path, rep, r.priority, w.reason)
					}
				}
			}
			check("off", false)
			p.Set("switch", true)
			p.Set("signal:grid-carbon", true)
			check("on", true)
			p.Set("switch", false)
			p.Set("signal:grid-carbon", false)
			check("off again", false)
			if set.Throttle != nil {
				if st := set.Throttle.Stats(); st.InFlight != 0 {
					t.Errorf("%d in flight once all are finished", st.InFlight)
				}
			}
		})
	}
}

// Sources are the sources on, sorted; a source set twice is one, and off
// once is off; a nil Pressure is off and names none.
func TestPressureSources(t *testing.T) {
	var nilP *decision.Pressure
	if nilP.On() || nilP.Sources() != nil {
		t.Error("a nil Pressure is on")
	}
	var p decision.Pressure
	if p.On() || p.Sources() != nil {
		t.Error("the zero Pressure is on")
	}
	p.Set("switch", false) // off already: nothing
	p.Set("switch", true)
	p.Set("signal:b", true)
	p.Set("signal:a", true)
	p.Set("switch", true)
	if got := p.Sources(); !p.On() || !slices.Equal(got, []string{"signal:a", "signal:b", "switch"}) {
		t.Errorf("on %v, sources %q", p.On(), got)
	}
	p.Sources()[0] = "changed" // a copy
	p.Set("signal:b", false)
	p.Set("switch", false)
	if got := p.Sources(); !p.On() || !slices.Equal(got, []string{"signal:a"}) {
		t.Errorf("on %v, sources %q, want signal:a", p.On(), got)
	}
	p.Set("signal:a", false)
	if p.On() || p.Sources() != nil {
		t.Errorf("on %v with sources %q after all went off", p.On(), p.Sources())
	}
}

// Set, On and Sources from many goroutines at once (go test -race), while
// requests are decided under the Pressure; once every source is off
// again, it is off.
func TestPressureConcurrent(t *testing.T) {
	pol := classes(t)
	e := engine(t, nil)
	p := new(decision.Pressure)
	set := decision.Settings{Policy: pol, Pressure: p}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			src := fmt.Sprintf("signal:%d", g)
			for i := range 200 {
				p.Set(src, i%2 == 0)
				_ = p.On()
				if s := p.Sources(); !slices.IsSorted(s) {
					t.Errorf("sources %q not sorted", s)
				}
			}
		})
		wg.Go(func() {
			for range 200 {
				v := e.Decide(context.Background(), set, get("/reports", hdr{"X-Api-Key": {"key-a"}}))
				if !v.Pass && v.Status != 503 {
					t.Errorf("status %d, want a pass or 503", v.Status)
				}
				v.Finish(nil)
			}
		})
	}
	wg.Wait()
	if p.On() {
		t.Errorf("on with %q after every source went off", p.Sources())
	}
}
