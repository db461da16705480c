package policy_test

import (
	"fmt"
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
