package policy_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/policy"
)

// benchRules is a policy of n path-and-method rules, the kind every
// policy written before hosts and headers could be matched has.
func benchRules(b *testing.B, n int) *policy.Compiled {
	b.Helper()
	p := policy.Policy{}
	for i := range n {
		p.Rules = append(p.Rules, policy.Rule{Name: fmt.Sprintf("r%d", i),
			Match: policy.Match{Path: fmt.Sprintf("/api/v%d/claims", i), Methods: []string{"GET", "POST"}},
			Key:   policy.KeySpec{Kind: policy.KeyIP}, Rate: policy.Rate{N: 100, Period: time.Minute}})
	}
	p.Rules = append(p.Rules, policy.Rule{Name: "all", Key: policy.KeySpec{Kind: policy.KeyIP}, Rate: policy.Rate{N: 100, Period: time.Minute}})
	c, err := policy.Compile(p)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkMatch matches a request against policies of path-and-method
// rules: go test -run '^$' -bench Match -count 5 ./policy/
func BenchmarkMatch(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		c := benchRules(b, n)
		path := fmt.Sprintf("/api/v%d/claims/7", n/2)
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			dst := make([]int, 0, 8)
			b.ReportAllocs()
			for b.Loop() {
				dst = c.Match("GET", path, dst[:0])
			}
			if len(dst) == 0 {
				b.Fatal("no rule matched")
			}
		})
	}
}
