package policy_test

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// FuzzCompile builds a policy from fuzzed names, keys, rates, bursts,
// concurrencies and plans. Compile never panics; it either fails with FieldErrors only, or
// every caller gets a valid limit from every rule.
func FuzzCompile(f *testing.F) {
	f.Add("api", uint8(2), int64(100), int64(time.Minute), int64(0), "/", "large", "api", int64(1000), int64(time.Minute),
		"acme", "k-acme", "bolt", "k-bolt", "base", int64(5), 0, false, int64(0), int64(0))
	f.Add("claims", uint8(4), int64(10), int64(time.Second), int64(20), "/claims", "p", "base", int64(40), int64(time.Second),
		"a", "k1", "b", "k2", "claims", int64(1), 48, true, int64(0), int64(3))
	f.Add("log", uint8(3), int64(10001), int64(time.Second), int64(0), "x", "", "nope", int64(0), int64(0),
		"", "", "a b", "k 2", "zzz", int64(-1), 129, true, int64(-5), int64(0))
	f.Add("g", uint8(5), int64(1), int64(limiter.MaxPeriod), int64(583345), "/", "p", "g", int64(2), int64(limiter.MaxPeriod),
		"x", "k", "x", "k", "g", int64(1_000_000_000), 128, false, int64(10), int64(20))
	f.Add("b", uint8(6), int64(7), int64(3*time.Millisecond), int64(1_000_000_000), "/", "p", "b", int64(1_000_000_000), int64(time.Millisecond),
		"c1", "key", "c2", "key2", "base", int64(3), 1, false, int64(2), int64(0))
	f.Fuzz(func(t *testing.T, ruleName string, alg uint8, n, period, burst int64, path, planName, planRule string,
		planN, planPeriod int64, id1, key1, id2, key2, ownRule string, ownN int64, ipv6 int, anonymous bool, conc, planConc int64) {
		p := policy.Policy{
			IPv6Prefix: ipv6,
			Rules: []policy.Rule{
				{Name: ruleName, Match: policy.Match{Path: path}, Algorithm: limiter.Algorithm(alg % 8),
					Rate: policy.Rate{N: n, Period: time.Duration(period)}, Burst: burst},
				{Name: "base", Algorithm: limiter.TokenBucket, Rate: rate(10, time.Second), Burst: burst},
			},
			Plans: map[string]policy.Plan{planName: {Limits: map[string]policy.Rate{
				planRule: {N: planN, Period: time.Duration(planPeriod)},
				"base":   {N: planN, Period: time.Second},
			}}},
			Clients: policy.Clients{List: []policy.Client{
				{ID: id1, Keys: []string{key1}, Plan: planName},
				{ID: id2, Keys: []string{key2}, Limits: map[string]policy.Rate{ownRule: {N: ownN, Period: time.Duration(period)}}},
			}},
		}
		if anonymous {
			p.Clients.Unknown = policy.UnknownAnonymous
		}
		if conc != 0 { // rule 0 limits requests in flight, perhaps with a rate too (an error)
			p.Rules[0].Concurrency = conc
			p.Plans[planName] = policy.Plan{Limits: p.Plans[planName].Limits, Concurrency: map[string]int64{planRule: planConc}}
		}
		c, err := policy.Compile(p)
		if err != nil {
			if c != nil {
				t.Fatal("Compile returned a policy along with an error")
			}
			for _, fe := range fieldErrors(t, err) {
				if fe.Path == "" || fe.Msg == "" {
					t.Fatalf("FieldError without path or message: %q", fe.Error())
				}
			}
			return
		}
		checkCallers(t, c, p, id1, key1, id2, key2)
	})
}

// checkCallers checks that every caller of a compiled policy has a valid
// limit from every rule.
func checkCallers(t *testing.T, c *policy.Compiled, p policy.Policy, id1, key1, id2, key2 string) {
	t.Helper()
	callers := []*policy.Caller{c.Unidentified()}
	if a := c.Anonymous(); a != nil {
		callers = append(callers, a)
	} else if p.Clients.Unknown == policy.UnknownAnonymous {
		t.Fatal("UnknownAnonymous but no Anonymous caller")
	}
	for _, k := range [][2]string{{key1, id1}, {key2, id2}} {
		cl, ok := c.CallerByKey(k[0])
		if !ok || cl.ID != k[1] {
			t.Fatalf("CallerByKey(%q) = %v, %v; want client %q", k[0], cl, ok, k[1])
		}
		callers = append(callers, cl)
	}
	for _, cl := range callers {
		for i := range c.Rules() {
			if c.Rule(i).LimitsInFlight() {
				if n := cl.Concurrency(i); n < 1 || n > policy.MaxConcurrency || !cl.Limit(i).IsZero() || cl.StateTag(i) != "concurrency" {
					t.Fatalf("caller %q concurrency rule %d: concurrency %d, limit %v, tag %q", cl.ID, i, n, cl.Limit(i), cl.StateTag(i))
				}
				continue
			}
			l := cl.Limit(i)
			if l.IsZero() || l.Rate() < 1 || l.Rate() > limiter.MaxRate || l.Burst() < 1 || l.Burst() > limiter.MaxBurst ||
				l.Period() < limiter.MinPeriod || l.Period() > limiter.MaxPeriod {
				t.Fatalf("caller %q rule %d: invalid limit %v", cl.ID, i, l)
			}
			if l.Algorithm() != c.Rule(i).Algorithm {
				t.Fatalf("caller %q rule %d: algorithm %v, rule has %v", cl.ID, i, l.Algorithm(), c.Rule(i).Algorithm)
			}
			if !l.Algorithm().HasBurst() && l.Burst() != l.Rate() {
				t.Fatalf("caller %q rule %d: window limit %v with a burst apart from its rate", cl.ID, i, l)
			}
			if cl.StateTag(i) == "" {
				t.Fatalf("caller %q rule %d: empty state tag", cl.ID, i)
			}
		}
	}
}
