package policy_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

func TestCompileBaseIsValid(t *testing.T) {
	c := mustCompile(t, base())
	if c.Rules() != 2 || !c.IdentifiesByKey() {
		t.Fatalf("Rules() = %d, IdentifiesByKey() = %v; want 2, true", c.Rules(), c.IdentifiesByKey())
	}
}

// TestCompileErrors changes one thing in a valid policy and expects the
// FieldErrors at exactly these paths (nil: the change is valid).
func TestCompileErrors(t *testing.T) {
	long := strings.Repeat("k", 257)
	tests := []struct {
		name   string
		change func(p *policy.Policy)
		paths  []string
	}{
		{"rule name missing", addRule(""), []string{"rules[2].name"}},
		{"rule name with space", addRule("my api"), []string{"rules[2].name"}},
		{"rule name with slash", addRule("a/b"), []string{"rules[2].name"}},
		{"rule name not ASCII", addRule("régle"), []string{"rules[2].name"}},
		{"rule name of 65", addRule(strings.Repeat("a", 65)), []string{"rules[2].name"}},
		{"rule name of 64 is fine", addRule(strings.Repeat("a", 64)), nil},
		{"rule name of every allowed kind", addRule("Az09_-."), nil},
		{"rule that does nothing", func(p *policy.Policy) { p.Rules = append(p.Rules, policy.Rule{Name: "idle"}) }, []string{"rules[2].rate"}},
		{"rule that only degrades is fine", func(p *policy.Policy) { p.Rules = append(p.Rules, policy.Rule{Name: "d", Degrade: true}) }, nil},
		{
			// The plan's override of "api" now names no rule.
			"overridden rule renamed",
			func(p *policy.Policy) { p.Rules[0].Name = "all" },
			[]string{"plans.large.api"},
		},
		{
			// The second "api" is not a rule name, so the overrides of
			// "claims" point at nothing too.
			"duplicate rule name",
			func(p *policy.Policy) { p.Rules[1].Name = "api" },
			[]string{"clients.list[1].limits.claims", "plans.large.claims", "rules[1].name"},
		},
		{"path without slash", func(p *policy.Policy) { p.Rules[1].Match.Path = "claims" }, []string{"rules[1].match.path"}},
		{"path empty is fine", func(p *policy.Policy) { p.Rules[1].Match.Path = "" }, nil},
		{"path with trailing slash is fine", func(p *policy.Policy) { p.Rules[1].Match.Path = "/claims/" }, nil},
		{"path with a space is fine", func(p *policy.Policy) { p.Rules[1].Match.Path = "/my claims" }, nil},
		{"path with //", func(p *policy.Policy) { p.Rules[1].Match.Path = "/a//b" }, []string{"rules[1].match.path"}},
		{"path with ..", func(p *policy.Policy) { p.Rules[1].Match.Path = "/a/../claims" }, []string{"rules[1].match.path"}},
		{"path with ;", func(p *policy.Policy) { p.Rules[1].Match.Path = "/claims;v=1" }, []string{"rules[1].match.path"}},
		{"path with %", func(p *policy.Policy) { p.Rules[1].Match.Path = "/claims%2F7" }, []string{"rules[1].match.path"}},
		{"path with backslash", func(p *policy.Policy) { p.Rules[1].Match.Path = "/a\\b" }, []string{"rules[1].match.path"}},
		{"method lower case", func(p *policy.Policy) { p.Rules[1].Match.Methods = []string{"post"} }, []string{"rules[1].match.methods[0]"}},
		{"method mixed case", func(p *policy.Policy) { p.Rules[1].Match.Methods = []string{"GET", "Post"} }, []string{"rules[1].match.methods[1]"}},
		{"method empty", func(p *policy.Policy) { p.Rules[1].Match.Methods = []string{""} }, []string{"rules[1].match.methods[0]"}},
		{"method with space", func(p *policy.Policy) { p.Rules[1].Match.Methods = []string{"GET "} }, []string{"rules[1].match.methods[0]"}},
		{
			"two bad methods",
			func(p *policy.Policy) { p.Rules[1].Match.Methods = []string{"get", "PUT", "delete"} },
			[]string{"rules[1].match.methods[0]", "rules[1].match.methods[2]"},
		},
		{"key header empty", func(p *policy.Policy) { p.Rules[0].Key = policy.KeySpec{Kind: policy.KeyHeader} }, []string{"rules[0].key"}},
		{"key header with space", func(p *policy.Policy) { p.Rules[0].Key = policy.KeySpec{Kind: policy.KeyHeader, Header: "X Tenant"} }, []string{"rules[0].key"}},
		{"key header with colon", func(p *policy.Policy) { p.Rules[0].Key = policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant:"} }, []string{"rules[0].key"}},
		{"key header fine", func(p *policy.Policy) { p.Rules[0].Key = policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant_Id"} }, nil},
		// net/http holds Host and Transfer-Encoding apart from the
		// fields, and hop-by-hop fields never reach the upstream: a rule
		// counting by one would see every request without it.
		{"key header Host", func(p *policy.Policy) { p.Rules[0].Key = policy.KeySpec{Kind: policy.KeyHeader, Header: "host"} }, []string{"rules[0].key"}},
		{"key header Transfer-Encoding", func(p *policy.Policy) {
			p.Rules[0].Key = policy.KeySpec{Kind: policy.KeyHeader, Header: "Transfer-Encoding"}
		}, []string{"rules[0].key"}},
		{"key header Connection", func(p *policy.Policy) { p.Rules[0].Key = policy.KeySpec{Kind: policy.KeyHeader, Header: "CONNECTION"} }, []string{"rules[0].key"}},
		{"header ignored for ip", func(p *policy.Policy) { p.Rules[0].Key = policy.KeySpec{Kind: policy.KeyIP, Header: "bad header"} }, nil},
		{"missing header ip", func(p *policy.Policy) {
			p.Rules[0].Key = policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant", Missing: policy.MissingIP}
		}, nil},
		{"missing header on an ip rule", func(p *policy.Policy) {
			p.Rules[0].Key = policy.KeySpec{Kind: policy.KeyIP, Missing: policy.MissingReject}
		}, []string{"rules[0].missing_header"}},
		{"missing header unknown", func(p *policy.Policy) {
			p.Rules[0].Key = policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant", Missing: 9}
		}, []string{"rules[0].missing_header"}},
		{"negative cost", func(p *policy.Policy) { p.Rules[0].Cost = -1 }, []string{"rules[0].cost"}},
		{"cost 5 is fine", func(p *policy.Policy) { p.Rules[0].Cost = 5 }, nil},
		// A cost above what a limit allows at once refuses every request.
		{"cost equal to the rate is fine", func(p *policy.Policy) { p.Rules[0].Cost = 100 }, nil},
		{"cost above the rate", func(p *policy.Policy) { p.Rules[0].Cost = 101 }, []string{"rules[0].cost"}},
		{"cost above a client's own burst", func(p *policy.Policy) { p.Rules[1].Cost = 11 }, []string{"clients.list[1].limits.claims"}},
		{"cost above the burst", func(p *policy.Policy) { p.Rules[1].Cost = 21 }, []string{"clients.list[1].limits.claims", "rules[1].cost"}},
		{
			"cost above a plan's rate",
			func(p *policy.Policy) { p.Rules[0].Cost = 5; p.Plans["large"].Limits["api"] = rate(3, time.Minute) },
			[]string{"plans.large.api"},
		},
		{"rate zero", func(p *policy.Policy) { p.Rules[0].Rate.N = 0 }, []string{"rules[0].rate"}},
		{"rate negative", func(p *policy.Policy) { p.Rules[0].Rate.N = -3 }, []string{"rules[0].rate"}},
		{"rate too large", func(p *policy.Policy) { p.Rules[0].Rate.N = limiter.MaxRate + 1 }, []string{"rules[0].rate"}},
		{"rate largest is fine", func(p *policy.Policy) { p.Rules[0].Rate.N = limiter.MaxRate }, nil},
		{"period zero", func(p *policy.Policy) { p.Rules[0].Rate.Period = 0 }, []string{"rules[0].rate"}},
		{"period too short", func(p *policy.Policy) { p.Rules[0].Rate.Period = 999 * time.Microsecond }, []string{"rules[0].rate"}},
		{"period too long", func(p *policy.Policy) { p.Rules[0].Rate.Period = limiter.MaxPeriod + time.Microsecond }, []string{"rules[0].rate"}},
		{"period not whole microseconds", func(p *policy.Policy) { p.Rules[0].Rate.Period = time.Millisecond + 1 }, []string{"rules[0].rate"}},
		{
			"sliding_log over 10000",
			func(p *policy.Policy) { p.Rules[0].Algorithm, p.Rules[0].Rate.N = limiter.SlidingLog, 10001 },
			// The plan's 1000/m is fine for sliding_log.
			[]string{"rules[0].rate"},
		},
		{"sliding_log at 10000", func(p *policy.Policy) { p.Rules[0].Algorithm, p.Rules[0].Rate.N = limiter.SlidingLog, 10000 }, nil},
		{"burst on sliding_window is ignored", func(p *policy.Policy) { p.Rules[0].Burst = 7 }, nil},
		{
			"burst on fixed_window is ignored",
			func(p *policy.Policy) { p.Rules[0].Algorithm, p.Rules[0].Burst = limiter.FixedWindow, 7 },
			nil,
		},
		{
			"burst on sliding_log is ignored",
			func(p *policy.Policy) { p.Rules[0].Algorithm, p.Rules[0].Burst = limiter.SlidingLog, 1 },
			nil,
		},
		{
			"bucket burst too large",
			func(p *policy.Policy) { p.Rules[1].Burst = limiter.MaxBurst + 1 },
			// Scaled to 40/s the burst is 4x too large as well; scaled to
			// bolt's 5/s it is in range.
			[]string{"plans.large.claims", "rules[1].burst"},
		},
		{"bucket burst largest", func(p *policy.Policy) { p.Rules[1].Burst, p.Plans, p.Clients = limiter.MaxBurst, nil, policy.Clients{} }, nil},
		{
			"plan override scales the burst out of range",
			func(p *policy.Policy) { p.Rules[1].Burst = limiter.MaxBurst / 2 },
			[]string{"plans.large.claims"},
		},
		{"unknown rule in a plan", func(p *policy.Policy) { p.Plans["large"].Limits["nope"] = rate(1, time.Second) }, []string{"plans.large.nope"}},
		{
			"unknown rule in a client's limits",
			func(p *policy.Policy) {
				p.Clients.List[2].Limits = map[string]policy.Rate{"nope": rate(1, time.Second)}
			},
			[]string{"clients.list[2].limits.nope"},
		},
		{
			// acme and bolt are both on "large": one error, at the plan.
			"bad rate in a plan two clients use",
			func(p *policy.Policy) { p.Plans["large"].Limits["api"] = rate(0, time.Minute) },
			[]string{"plans.large.api"},
		},
		{
			"bad period in a plan",
			func(p *policy.Policy) { p.Plans["large"].Limits["claims"] = rate(5, 0) },
			[]string{"plans.large.claims"},
		},
		{
			"bad rate in an unused plan",
			func(p *policy.Policy) {
				p.Plans["unused"] = policy.Plan{Limits: map[string]policy.Rate{"api": rate(1, limiter.MaxPeriod*2)}}
			},
			[]string{"plans.unused.api"},
		},
		{
			"sliding_log plan over 10000",
			func(p *policy.Policy) {
				p.Rules[0].Algorithm = limiter.SlidingLog
				p.Plans["large"].Limits["api"] = rate(20000, time.Minute)
			},
			[]string{"plans.large.api"},
		},
		{
			"bad rate in a client's own limits",
			func(p *policy.Policy) { p.Clients.List[1].Limits["claims"] = rate(-1, time.Second) },
			[]string{"clients.list[1].limits.claims"},
		},
		{
			"bad rate in both plan and client",
			func(p *policy.Policy) {
				p.Plans["large"].Limits["claims"] = rate(0, time.Second)
				p.Clients.List[1].Limits["claims"] = rate(0, time.Second)
			},
			[]string{"clients.list[1].limits.claims", "plans.large.claims"},
		},
		{"duplicate client id", func(p *policy.Policy) { p.Clients.List[2].ID = "acme" }, []string{"clients.list[2].id"}},
		{"client id empty", func(p *policy.Policy) { p.Clients.List[2].ID = "" }, []string{"clients.list[2].id"}},
		{"client id with space", func(p *policy.Policy) { p.Clients.List[2].ID = "co rp" }, []string{"clients.list[2].id"}},
		{"client id of 65", func(p *policy.Policy) { p.Clients.List[2].ID = strings.Repeat("c", 65) }, []string{"clients.list[2].id"}},
		{"key of another client", func(p *policy.Policy) { p.Clients.List[2].Keys = []string{"k-corp", "k-bolt-2"} }, []string{"clients.list[2].keys[1]"}},
		{"key empty", func(p *policy.Policy) { p.Clients.List[2].Keys = []string{""} }, []string{"clients.list[2].keys[0]"}},
		{"key with space", func(p *policy.Policy) { p.Clients.List[2].Keys = []string{"k corp"} }, []string{"clients.list[2].keys[0]"}},
		{"key with tab", func(p *policy.Policy) { p.Clients.List[2].Keys = []string{"k\tcorp"} }, []string{"clients.list[2].keys[0]"}},
		{"key with control char", func(p *policy.Policy) { p.Clients.List[2].Keys = []string{"k\x01corp"} }, []string{"clients.list[2].keys[0]"}},
		{"key with newline", func(p *policy.Policy) { p.Clients.List[2].Keys = []string{"k-corp\n"} }, []string{"clients.list[2].keys[0]"}},
		{"key with DEL", func(p *policy.Policy) { p.Clients.List[2].Keys = []string{"k\x7f"} }, []string{"clients.list[2].keys[0]"}},
		{"key not ASCII", func(p *policy.Policy) { p.Clients.List[2].Keys = []string{"kéy"} }, []string{"clients.list[2].keys[0]"}},
		{"key of 257 bytes", func(p *policy.Policy) { p.Clients.List[2].Keys = []string{"ok", long} }, []string{"clients.list[2].keys[1]"}},
		{"key of 256 bytes", func(p *policy.Policy) { p.Clients.List[2].Keys = []string{long[:256]} }, nil},
		{"key of visible punctuation", func(p *policy.Policy) { p.Clients.List[2].Keys = []string{`!"#$%&'()*+,-./:;<=>?@[\]^_{|}~` + "`"} }, nil},
		{"no keys", func(p *policy.Policy) { p.Clients.List[2].Keys = nil }, []string{"clients.list[2].keys"}},
		{"unknown plan", func(p *policy.Policy) { p.Clients.List[2].Plan = "huge" }, []string{"clients.list[2].plan"}},
		{"anonymous plan needs no definition", func(p *policy.Policy) { p.Clients.List[2].Plan = policy.AnonymousPlan }, nil},
		{"ipv6_prefix negative", func(p *policy.Policy) { p.IPv6Prefix = -1 }, []string{"ipv6_prefix"}},
		{"ipv6_prefix 129", func(p *policy.Policy) { p.IPv6Prefix = 129 }, []string{"ipv6_prefix"}},
		{"ipv6_prefix 1", func(p *policy.Policy) { p.IPv6Prefix = 1 }, nil},
		{"ipv6_prefix 128", func(p *policy.Policy) { p.IPv6Prefix = 128 }, nil},
		{"forwarded_header Forwarded", func(p *policy.Policy) { p.ForwardedHeader = policy.Forwarded }, nil},
		{"forwarded_header unknown", func(p *policy.Policy) { p.ForwardedHeader = policy.Forwarded + 1 }, []string{"forwarded_header"}},
		{"key_header with space", func(p *policy.Policy) { p.Clients.KeyHeader = "X API Key" }, []string{"clients.key_header"}},
		{"key_header with colon", func(p *policy.Policy) { p.Clients.KeyHeader = "Authorization:" }, []string{"clients.key_header"}},
		{"key_header fine", func(p *policy.Policy) { p.Clients.KeyHeader = "Authorization" }, nil},
		{"key_header Host", func(p *policy.Policy) { p.Clients.KeyHeader = "Host" }, []string{"clients.key_header"}},
		{"key_header Upgrade", func(p *policy.Policy) { p.Clients.KeyHeader = "upgrade" }, []string{"clients.key_header"}},
		// A caller's X-Sluice-Client and the override headers are removed
		// before anything is read: counting by one counts nothing.
		{"key_header X-Sluice-Client", func(p *policy.Policy) { p.Clients.KeyHeader = "x_sluice_client" }, []string{"clients.key_header"}},
		{"key header X-HTTP-Method-Override", func(p *policy.Policy) {
			p.Rules[0].Key = policy.KeySpec{Kind: policy.KeyHeader, Header: "X-HTTP-Method-Override"}
		}, []string{"rules[0].key"}},
		{"key header X-Original-URL", func(p *policy.Policy) {
			p.Rules[0].Key = policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Original-URL"}
		}, []string{"rules[0].key"}},
		{
			"plan name with space",
			func(p *policy.Policy) { p.Plans["big plan"] = policy.Plan{}; p.Clients.List[2].Plan = "big plan" },
			[]string{"plans.big plan"},
		},
		{"plan name empty", func(p *policy.Policy) { p.Plans[""] = policy.Plan{} }, []string{"plans."}},
		{"allow a listed client", func(p *policy.Policy) { p.Rules[0].Allow = []string{"corp", "acme"} }, nil},
		{"allow an unknown client", func(p *policy.Policy) { p.Rules[1].Allow = []string{"corp", "crop"} }, []string{"rules[1].allow[1]"}},
		{"allow with no clients", func(p *policy.Policy) {
			*p = oneRule(policy.Rule{Name: "r", Rate: rate(1, time.Second), Allow: []string{"acme"}})
		}, []string{"rules[0].allow[0]"}},
		{"no rules: limits nothing", func(p *policy.Policy) { *p = policy.Policy{} }, nil},
		{"no rules but clients", func(p *policy.Policy) {
			p.Rules, p.Plans = nil, nil
			for i := range p.Clients.List {
				p.Clients.List[i].Plan, p.Clients.List[i].Limits = "", nil
			}
		}, nil},
		{
			"bad rate in the anonymous plan",
			func(p *policy.Policy) {
				p.Clients.Unknown = policy.UnknownAnonymous
				p.Plans[policy.AnonymousPlan] = policy.Plan{Limits: map[string]policy.Rate{"api": rate(0, time.Minute)}}
			},
			[]string{"plans.anonymous.api"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base()
			tt.change(&p)
			c, err := policy.Compile(p)
			got := errorPaths(t, err)
			if !slices.Equal(got, tt.paths) {
				t.Fatalf("error paths = %q, want %q\nerror: %v", got, tt.paths, err)
			}
			if (c == nil) != (err != nil) {
				t.Fatalf("Compile returned %v and %v; want exactly one of them", c, err)
			}
		})
	}
}

// addRule returns a change that appends a rule named name.
func addRule(name string) func(p *policy.Policy) {
	return func(p *policy.Policy) {
		p.Rules = append(p.Rules, policy.Rule{Name: name, Rate: rate(1, time.Second)})
	}
}

// TestCompileReportsEverythingAtOnce breaks many fields of one policy and
// expects one FieldError for each.
func TestCompileReportsEverythingAtOnce(t *testing.T) {
	p := base()
	p.IPv6Prefix = 200
	p.ForwardedHeader = 200
	p.Rules = append(p.Rules,
		policy.Rule{Name: "", Rate: rate(1, time.Second)},
		policy.Rule{Name: "bad", Match: policy.Match{Path: "x", Methods: []string{"get"}}, Cost: -2,
			Key: policy.KeySpec{Kind: policy.KeyHeader, Header: "a b"}, Rate: rate(0, time.Second)},
		policy.Rule{Name: "bkt", Algorithm: limiter.GCRA, Rate: rate(1, time.Second), Burst: limiter.MaxBurst + 1},
	)
	p.Plans["large"].Limits["nope"] = rate(1, time.Second)
	p.Plans["large"].Limits["api"] = rate(0, time.Second)
	p.Clients.List = append(p.Clients.List,
		policy.Client{ID: "acme", Keys: []string{"k-acme", "bad key"}, Plan: "gold",
			Limits: map[string]policy.Rate{"nope": rate(1, time.Second), "claims": rate(1, 0)}},
		policy.Client{ID: "", Keys: nil},
	)
	want := []string{
		"clients.list[3].id",
		"clients.list[3].keys[0]",
		"clients.list[3].keys[1]",
		"clients.list[3].limits.claims",
		"clients.list[3].limits.nope",
		"clients.list[3].plan",
		"clients.list[4].id",
		"clients.list[4].keys",
		"forwarded_header",
		"ipv6_prefix",
		"plans.large.api",
		"plans.large.nope",
		"rules[2].name",
		"rules[3].cost",
		"rules[3].key",
		"rules[3].match.methods[0]",
		"rules[3].match.path",
		"rules[3].rate",
		"rules[4].burst",
	}
	c, err := policy.Compile(p)
	if c != nil {
		t.Fatal("Compile returned a policy along with errors")
	}
	if got := errorPaths(t, err); !slices.Equal(got, want) {
		t.Fatalf("error paths =\n%q\nwant\n%q", got, want)
	}
}

func TestFieldErrorText(t *testing.T) {
	p := base()
	p.Rules[1].Name = "api"
	p.Rules[0].Rate.N = 0
	p.Clients.List[2].Plan = "huge"
	p.Plans["small"] = policy.Plan{}
	_, err := policy.Compile(p)
	fes := fieldErrors(t, err)
	byPath := map[string]string{}
	for _, fe := range fes {
		if fe.Error() != fe.Path+": "+fe.Msg {
			t.Errorf("Error() = %q, want path: msg", fe.Error())
		}
		if strings.Contains(fe.Msg, "limiter:") {
			t.Errorf("%s: message %q keeps the limiter: prefix", fe.Path, fe.Msg)
		}
		byPath[fe.Path] = fe.Msg
	}
	for path, want := range map[string]string{
		"rules[1].name":                 `duplicate rule name "api" (also rules[0])`,
		"rules[0].rate":                 "rate 0 out of range",
		"clients.list[2].plan":          `unknown plan "huge" (plans: large, small)`,
		"plans.large.claims":            `unknown rule "claims" (rules: api`,
		"clients.list[1].limits.claims": `unknown rule "claims"`,
	} {
		if !strings.Contains(byPath[path], want) {
			t.Errorf("%s: message %q, want it to contain %q", path, byPath[path], want)
		}
	}
	var fe *policy.FieldError
	if !errors.As(err, &fe) {
		t.Fatal("errors.As cannot find a *FieldError in the joined error")
	}
	if !strings.Contains(err.Error(), "rules[0].rate: rate 0 out of range") {
		t.Errorf("joined error %q misses a problem", err)
	}
}

func TestUnknownPlanWithoutPlans(t *testing.T) {
	p := base()
	p.Plans = nil
	p.Clients.List = p.Clients.List[2:]
	p.Clients.List[0].Plan = "gold"
	_, err := policy.Compile(p)
	fes := fieldErrors(t, err)
	if len(fes) != 1 || !strings.Contains(fes[0].Msg, "none defined") {
		t.Fatalf("errors = %v, want one unknown plan saying no plans are defined", err)
	}
}

// TestNegativeBurstRejected: a bucket's Burst of 0 means the rate's N, and
// anything below 0 is out of range (limiter: 1 to MaxBurst), to be reported
// at rules[i].burst. Compile ignores a negative burst instead and silently
// gives the bucket a burst equal to the rate.
func TestNegativeBurstRejected(t *testing.T) {
	for _, alg := range []limiter.Algorithm{limiter.TokenBucket, limiter.GCRA, limiter.LeakyBucket} {
		p := oneRule(policy.Rule{Name: "r", Algorithm: alg, Rate: rate(10, time.Second), Burst: -5})
		c, err := policy.Compile(p)
		got := errorPaths(t, err)
		if !slices.Equal(got, []string{"rules[0].burst"}) {
			var l limiter.Limit
			if c != nil {
				l = c.RuleLimit(0)
			}
			t.Errorf("%v with Burst -5: error paths %q (compiled limit %v), want [rules[0].burst]", alg, got, l)
		}
	}
}

// TestUnknownAlgorithmPath: an Algorithm that is none of the six is a
// problem of the rule's algorithm field, not of its rate.
func TestUnknownAlgorithmPath(t *testing.T) {
	p := oneRule(policy.Rule{Name: "r", Algorithm: limiter.Algorithm(9), Rate: rate(10, time.Second)})
	_, err := policy.Compile(p)
	got := errorPaths(t, err)
	if len(got) == 0 {
		t.Fatal("Compile accepted Algorithm(9)")
	}
	if !slices.Equal(got, []string{"rules[0].algorithm"}) {
		t.Errorf("Algorithm(9): error paths %q, want [rules[0].algorithm]\nerror: %v", got, err)
	}
}
