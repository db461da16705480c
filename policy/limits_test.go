package policy_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

var (
	ruleAPI    = limiter.MustNew(limiter.SlidingWindow, 100, time.Minute, 0)
	largeAPI   = limiter.MustNew(limiter.SlidingWindow, 1000, time.Minute, 0)
	ruleClaims = limiter.MustNew(limiter.TokenBucket, 10, time.Second, 20)
	// 40/s scales the burst of 20 at 10/s to 80, 5/s to 10.
	largeClaims = limiter.MustNew(limiter.TokenBucket, 40, time.Second, 80)
	boltClaims  = limiter.MustNew(limiter.TokenBucket, 5, time.Second, 10)
)

// TestLimitResolution: a client's own override beats its plan's, which
// beats the rule's own rate.
func TestLimitResolution(t *testing.T) {
	c := mustCompile(t, base())
	tests := []struct {
		id, plan    string
		api, claims limiter.Limit
	}{
		{"acme", "large", largeAPI, largeClaims},
		{"bolt", "large", largeAPI, boltClaims},
		{"corp", "", ruleAPI, ruleClaims},
	}
	for _, tt := range tests {
		cl := callerByID(t, c, tt.id)
		if cl.ID != tt.id || cl.Plan != tt.plan {
			t.Errorf("caller %q: ID %q, Plan %q; want plan %q", tt.id, cl.ID, cl.Plan, tt.plan)
		}
		for i, want := range []limiter.Limit{tt.api, tt.claims} {
			if got := cl.Limit(i); got != want {
				t.Errorf("%s: Limit(%d) = %v, want %v", tt.id, i, got, want)
			}
		}
	}
	u := c.Unidentified()
	for i, want := range []limiter.Limit{ruleAPI, ruleClaims} {
		if u.Limit(i) != want || c.RuleLimit(i) != want {
			t.Errorf("rule %d: Unidentified().Limit = %v, RuleLimit = %v, want %v", i, u.Limit(i), c.RuleLimit(i), want)
		}
	}
	if u.ID != "" || u.Plan != "" {
		t.Errorf("Unidentified() = {ID %q, Plan %q}, want empty", u.ID, u.Plan)
	}
}

func TestAnonymousLimits(t *testing.T) {
	p := base()
	if c := mustCompile(t, p); c.Anonymous() != nil {
		t.Fatalf("Anonymous() = %+v with UnknownReject, want nil", c.Anonymous())
	}
	p.Clients.Unknown = policy.UnknownAnonymous
	c := mustCompile(t, p)
	a := c.Anonymous()
	if a == nil || a.ID != "" || a.Plan != policy.AnonymousPlan {
		t.Fatalf("Anonymous() = %+v, want ID \"\" on plan anonymous", a)
	}
	if a.Limit(0) != ruleAPI || a.Limit(1) != ruleClaims {
		t.Errorf("anonymous without a plan: %v, %v; want the rules' %v, %v", a.Limit(0), a.Limit(1), ruleAPI, ruleClaims)
	}

	p.Plans[policy.AnonymousPlan] = policy.Plan{Limits: map[string]policy.Rate{"claims": rate(1, time.Second)}}
	p.Clients.List[2].Plan = policy.AnonymousPlan
	c = mustCompile(t, p)
	want := limiter.MustNew(limiter.TokenBucket, 1, time.Second, 2)
	for _, cl := range []*policy.Caller{c.Anonymous(), callerByID(t, c, "corp")} {
		if cl.Limit(0) != ruleAPI || cl.Limit(1) != want {
			t.Errorf("%q on plan anonymous: %v, %v; want %v, %v", cl.ID, cl.Limit(0), cl.Limit(1), ruleAPI, want)
		}
	}
}

// TestBurstScaling: an override of a bucket's rate scales the rule's burst
// in proportion to N, rounded up and at least 1; the window algorithms'
// burst is always the rate.
func TestBurstScaling(t *testing.T) {
	tests := []struct {
		alg       limiter.Algorithm
		rule      policy.Rate
		burst     int64
		override  policy.Rate
		wantBurst int64
	}{
		{limiter.TokenBucket, rate(10, time.Second), 20, rate(10, time.Second), 20},
		{limiter.TokenBucket, rate(10, time.Second), 20, rate(40, time.Second), 80},
		{limiter.TokenBucket, rate(10, time.Second), 20, rate(5, time.Second), 10},
		{limiter.TokenBucket, rate(10, time.Second), 20, rate(1, time.Second), 2},
		{limiter.TokenBucket, rate(10, time.Second), 20, rate(7, time.Second), 14},
		{limiter.TokenBucket, rate(10, time.Second), 3, rate(4, time.Second), 2},    // 1.2 rounds up
		{limiter.TokenBucket, rate(10, time.Second), 3, rate(1, time.Second), 1},    // 0.3 rounds up to 1
		{limiter.TokenBucket, rate(10, time.Second), 1, rate(1, time.Second), 1},    // never 0
		{limiter.TokenBucket, rate(3, time.Second), 10, rate(10, time.Second), 34},  // 33.3 rounds up
		{limiter.TokenBucket, rate(10, time.Second), 20, rate(10, time.Minute), 20}, // same N, other period
		{limiter.TokenBucket, rate(10, time.Second), 0, rate(40, time.Second), 40},  // no burst: the rate
		{limiter.TokenBucket, rate(10, time.Second), 0, rate(5, time.Second), 5},
		{limiter.GCRA, rate(100, time.Minute), 20, rate(1000, time.Minute), 200},
		{limiter.GCRA, rate(100, time.Minute), 20, rate(50, time.Hour), 10},
		{limiter.LeakyBucket, rate(6, time.Second), 1, rate(12, time.Second), 2},
		{limiter.LeakyBucket, rate(6, time.Second), 1, rate(2, time.Second), 1},
		{limiter.SlidingWindow, rate(100, time.Minute), 7, rate(50, time.Minute), 50},
		{limiter.FixedWindow, rate(100, time.Minute), 7, rate(500, time.Minute), 500},
		{limiter.SlidingLog, rate(100, time.Minute), 7, rate(30, time.Second), 30},
		{0, rate(100, time.Minute), 7, rate(30, time.Second), 30}, // default sliding_window
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%v %v burst %d at %v", tt.alg, tt.rule, tt.burst, tt.override)
		t.Run(name, func(t *testing.T) {
			p := policy.Policy{
				Rules: []policy.Rule{{Name: "r", Algorithm: tt.alg, Rate: tt.rule, Burst: tt.burst}},
				Plans: map[string]policy.Plan{"p": {Limits: map[string]policy.Rate{"r": tt.override}}},
				Clients: policy.Clients{List: []policy.Client{
					{ID: "by-plan", Keys: []string{"k1"}, Plan: "p"},
					{ID: "by-own", Keys: []string{"k2"}, Limits: map[string]policy.Rate{"r": tt.override}},
				}},
			}
			c := mustCompile(t, p)
			alg := tt.alg
			if alg == 0 {
				alg = limiter.SlidingWindow
			}
			want := limiter.MustNew(alg, tt.override.N, tt.override.Period, tt.wantBurst)
			for _, id := range []string{"by-plan", "by-own"} {
				if got := callerByID(t, c, id).Limit(0); got != want {
					t.Errorf("%s: Limit(0) = %v (burst %d), want %v (burst %d)", id, got, got.Burst(), want, want.Burst())
				}
			}
			ruleBurst := tt.burst
			if !alg.HasBurst() || ruleBurst == 0 {
				ruleBurst = tt.rule.N
			}
			if got := c.RuleLimit(0); got.Burst() != ruleBurst || got.Rate() != tt.rule.N {
				t.Errorf("RuleLimit(0) = %v (burst %d), want rate %d burst %d", got, got.Burst(), tt.rule.N, ruleBurst)
			}
		})
	}
}

// TestStateTag: every caller of a rule has the same tag, the rule's
// algorithm, whatever its plan or own override: a key keeps its counters
// when the caller's limit changes.
func TestStateTag(t *testing.T) {
	p := base()
	p.Clients.List = append(p.Clients.List,
		policy.Client{ID: "echo", Keys: []string{"k-echo"}, Limits: map[string]policy.Rate{"claims": rate(40, time.Second)}},
	)
	c := mustCompile(t, p)
	for i := range c.Rules() {
		want := c.Rule(i).Algorithm.String()
		if got := c.Unidentified().StateTag(i); got != want {
			t.Errorf("unidentified: StateTag(%d) = %q, want %q", i, got, want)
		}
		for _, id := range []string{"acme", "bolt", "corp", "echo"} {
			if got := callerByID(t, c, id).StateTag(i); got != want {
				t.Errorf("%s: StateTag(%d) = %q, want %q", id, i, got, want)
			}
		}
	}
}

// TestStateTagAcrossReloads: recompiling with other rates and bursts keeps
// the tags; another algorithm changes them.
func TestStateTagAcrossReloads(t *testing.T) {
	old := mustCompile(t, base())
	p := base()
	p.Rules[1].Burst = 30
	p.Rules[0].Rate = rate(7, time.Hour)
	p.Plans["large"].Limits["api"] = rate(2000, time.Minute)
	c := mustCompile(t, p)
	for _, id := range []string{"acme", "bolt", "corp"} {
		for i := range c.Rules() {
			if before, after := callerByID(t, old, id).StateTag(i), callerByID(t, c, id).StateTag(i); before != after {
				t.Errorf("%s rule %d: tag %q -> %q for a changed rate or burst", id, i, before, after)
			}
		}
	}
	p = base()
	p.Rules[1].Algorithm = limiter.FixedWindow
	p.Rules[1].Burst = 0
	c = mustCompile(t, p)
	if before, after := old.Unidentified().StateTag(1), c.Unidentified().StateTag(1); before == after {
		t.Errorf("another algorithm keeps the tag %q", after)
	}
}

func TestDefaults(t *testing.T) {
	c := mustCompile(t, oneRule(policy.Rule{Name: "r", Rate: rate(5, time.Second)}))
	r := c.Rule(0)
	if r.Algorithm != limiter.SlidingWindow || r.Cost != 1 || r.Mode != policy.Enforce || r.Key.Kind != policy.KeyClient {
		t.Errorf("defaults: algorithm %v, cost %d, mode %v, key %v; want sliding_window, 1, enforce, client",
			r.Algorithm, r.Cost, r.Mode, r.Key)
	}
	if got := c.RuleLimit(0); got.Algorithm() != limiter.SlidingWindow || got.Burst() != 5 {
		t.Errorf("RuleLimit(0) = %v, want sliding_window 5/1s", got)
	}
	if c.KeyHeader() != "X-API-Key" {
		t.Errorf("KeyHeader() = %q, want X-API-Key", c.KeyHeader())
	}
	if got := c.IPKey(addr("2001:db8:1:2:3:4:5:6")); got != "2001:db8:1:2::/64" {
		t.Errorf("IPKey groups by %q, want the /64 2001:db8:1:2::/64", got)
	}
	if c.IdentifiesByKey() || c.Anonymous() != nil {
		t.Errorf("no clients: IdentifiesByKey %v, Anonymous %v; want false, nil", c.IdentifiesByKey(), c.Anonymous())
	}

	p := oneRule(policy.Rule{Name: "r", Algorithm: limiter.GCRA, Rate: rate(5, time.Second), Cost: 3, Mode: policy.Shadow})
	p.Clients.KeyHeader = "Authorization"
	c = mustCompile(t, p)
	if r := c.Rule(0); r.Algorithm != limiter.GCRA || r.Cost != 3 || r.Mode != policy.Shadow {
		t.Errorf("set fields: %v, %d, %v; want gcra, 3, shadow", r.Algorithm, r.Cost, r.Mode)
	}
	if c.KeyHeader() != "Authorization" {
		t.Errorf("KeyHeader() = %q, want Authorization", c.KeyHeader())
	}
	if got := c.Policy(); got.Rules[0].Name != "r" || got.Clients.KeyHeader != "Authorization" {
		t.Errorf("Policy() = %+v, want the policy compiled", got)
	}
}

// TestLimitSource: where each caller's limit of a rule comes from: its
// own override, else its plan's, else the rule's ("").
func TestLimitSource(t *testing.T) {
	c := mustCompile(t, base())
	want := map[string][2]string{ // caller: rules api, claims
		"acme": {"plan:large", "plan:large"},
		"bolt": {"plan:large", "client:bolt"},
		"corp": {"", ""},
	}
	for id, w := range want {
		for i := range c.Rules() {
			if got := callerByID(t, c, id).LimitSource(i); got != w[i] {
				t.Errorf("%s rule %s: LimitSource = %q, want %q", id, c.Rule(i).Name, got, w[i])
			}
		}
	}
	for i := range c.Rules() {
		if got := c.Unidentified().LimitSource(i); got != "" {
			t.Errorf("unidentified rule %d: LimitSource = %q, want \"\"", i, got)
		}
	}
}
