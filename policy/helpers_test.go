package policy_test

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// base is a valid policy: a sliding_window rule for everything, a
// token_bucket rule for POST /claims with a burst, a plan that raises both,
// and three clients: acme on the plan, bolt on the plan with an override
// of its own, corp on the rules' rates.
func base() policy.Policy {
	return policy.Policy{
		Rules: []policy.Rule{
			{Name: "api", Rate: rate(100, time.Minute)},
			{
				Name:      "claims",
				Match:     policy.Match{Path: "/claims", Methods: []string{"POST"}},
				Algorithm: limiter.TokenBucket,
				Rate:      rate(10, time.Second),
				Burst:     20,
			},
		},
		Plans: map[string]policy.Plan{
			"large": {Limits: map[string]policy.Rate{"api": rate(1000, time.Minute), "claims": rate(40, time.Second)}},
		},
		Clients: policy.Clients{List: []policy.Client{
			{ID: "acme", Keys: []string{"k-acme"}, Plan: "large"},
			{ID: "bolt", Keys: []string{"k-bolt-1", "k-bolt-2"}, Plan: "large",
				Limits: map[string]policy.Rate{"claims": rate(5, time.Second)}},
			{ID: "corp", Keys: []string{"k-corp"}},
		}},
	}
}

// oneRule is a policy of the single rule r, without clients or plans.
func oneRule(r policy.Rule) policy.Policy { return policy.Policy{Rules: []policy.Rule{r}} }

func rate(n int64, period time.Duration) policy.Rate { return policy.Rate{N: n, Period: period} }

func mustCompile(t testing.TB, p policy.Policy) *policy.Compiled {
	t.Helper()
	c, err := policy.Compile(p)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return c
}

// fieldErrors returns the FieldErrors joined in err; it fails the test if
// err holds anything else.
func fieldErrors(t testing.TB, err error) []*policy.FieldError {
	t.Helper()
	if err == nil {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var fes []*policy.FieldError
	for _, e := range errs {
		var fe *policy.FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("error %q (%T) is not a *policy.FieldError", e, e)
		}
		fes = append(fes, fe)
	}
	return fes
}

// errorPaths returns the sorted paths of the FieldErrors in err.
func errorPaths(t testing.TB, err error) []string {
	t.Helper()
	var paths []string
	for _, fe := range fieldErrors(t, err) {
		paths = append(paths, fe.Path)
	}
	slices.Sort(paths)
	return paths
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func prefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func callerByID(t testing.TB, c *policy.Compiled, id string) *policy.Caller {
	t.Helper()
	cl, ok := c.CallerByID(id)
	if !ok {
		t.Fatalf("CallerByID(%q): not found", id)
	}
	return cl
}
