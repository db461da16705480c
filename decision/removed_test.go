package decision_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// Two rules counting by X-Tenant each list its other spellings in Removed;
// with more of them than Removed is scanned for (a set then finds the
// ones already there), each is still listed once.
func TestRemovedOnceWhenMany(t *testing.T) {
	rule := func(name string) policy.Rule {
		return policy.Rule{Name: name, Key: policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant"},
			Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 100, Period: time.Minute}}
	}
	pol, err := policy.Compile(policy.Policy{Clients: policy.Clients{Unknown: policy.UnknownAnonymous},
		Rules: []policy.Rule{rule("a"), rule("b")}})
	if err != nil {
		t.Fatal(err)
	}
	h := hdr{"X-Tenant": {"acme"}}
	var want []string
	for i := 0; len(want) < 20; i++ {
		name := []byte("x_tenant")
		for j := range name {
			if i>>j&1 == 1 && name[j] != '_' {
				name[j] -= 'a' - 'A'
			}
		}
		if _, ok := h[string(name)]; !ok {
			h[string(name)] = []string{"other"}
			want = append(want, string(name))
		}
	}
	v := engine(t, nil).Decide(context.Background(), decision.Settings{Policy: pol}, get("/", h))
	defer v.Finish(nil)
	got := slices.Sorted(slices.Values(v.Removed))
	if slices.Sort(want); !slices.Equal(got, want) {
		t.Errorf("Removed %q, want each of %q once", got, want)
	}
}
