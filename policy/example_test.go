package policy_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

func ExampleCompile() {
	p := policy.Policy{
		Rules: []policy.Rule{{
			Name:      "api",
			Match:     policy.Match{Path: "/v1"},
			Algorithm: limiter.GCRA,
			Rate:      policy.Rate{N: 100, Period: time.Minute},
			Burst:     20,
		}},
		Plans: map[string]policy.Plan{
			"pro": {Limits: map[string]policy.Rate{"api": {N: 1000, Period: time.Minute}}},
		},
		Clients: policy.Clients{List: []policy.Client{
			{ID: "acme", Keys: []string{"acme-key-1", "acme-key-2"}, Plan: "pro"},
			{ID: "hobby", Keys: []string{"hobby-key"}},
		}},
	}
	c, err := policy.Compile(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("rules matching GET /v1/users:", c.Match("GET", "/v1/users", nil))
	for _, key := range []string{"acme-key-2", "hobby-key"} {
		caller, _ := c.CallerByKey(key)
		fmt.Printf("%s (plan %q): %v\n", caller.ID, caller.Plan, caller.Limit(0))
	}

	p.Rules[0].Rate.N = 0
	p.Clients.List[1].Plan = "free"
	_, err = policy.Compile(p)
	fmt.Println(err)
	// Output:
	// rules matching GET /v1/users: [0]
	// acme (plan "pro"): gcra 1000/1m0s burst 200
	// hobby (plan ""): gcra 100/1m0s burst 20
	// rules[0].rate: rate 0 out of range (1 to 1000000000 per period)
	// clients.list[1].plan: unknown plan "free" (plans: pro)
}

// An operator lowers partner-a's limit of rule api for an incident and
// blocks an address range; the file's policy is unchanged.
func ExampleCompiled_WithOverrides() {
	c, err := policy.Compile(policy.Policy{
		Rules: []policy.Rule{{Name: "api", Rate: policy.Rate{N: 100, Period: time.Minute}}},
		Clients: policy.Clients{List: []policy.Client{
			{ID: "partner-a", Keys: []string{"key-a"}},
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, blocked, _ := policy.ParseTarget("ip:203.0.113.0/24")
	o, errs := c.WithOverrides([]policy.Override{
		{Client: "partner-a", Rule: "api", Rate: policy.Rate{N: 10, Period: time.Minute}},
		{Addr: blocked, Block: true, Until: time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)},
		{Client: "partner-b", Block: true},
	})
	for _, e := range errs {
		fmt.Printf("overrides[%d] %v\n", e.Index, e.Err)
	}
	before, _ := c.CallerByKey("key-a")
	after, _ := o.CallerByKey("key-a")
	fmt.Printf("file: %v (source %q)\n", before.Limit(0), before.Source(0))
	fmt.Printf("now: %v (source %q, counted on %q)\n", after.Limit(0), after.Source(0), after.LimitSource(0))
	p, until, ok := o.AddrBlocked(netip.MustParseAddr("203.0.113.7"))
	fmt.Println("203.0.113.7 blocked:", ok, p, until.Format(time.RFC3339))
	// Output:
	// overrides[2] target: unknown client "partner-b" (a client id from clients.list: partner-a; or ip:ADDR[/BITS])
	// file: sliding_window 100/1m0s (source "")
	// now: sliding_window 10/1m0s (source "override:partner-a", counted on "")
	// 203.0.113.7 blocked: true 203.0.113.0/24 2030-01-01T10:00:00Z
}
