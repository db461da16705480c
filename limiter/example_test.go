package limiter_test

import (
	"fmt"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// A Go program limits by key with a map of states: 2 requests per second,
// and the third at the same instant is told when to come back.
func ExampleDecide() {
	limit := limiter.MustNew(limiter.GCRA, 2, time.Second, 0)
	states := map[string]limiter.State{} // one State per key; guard it with a mutex if shared
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

	for range 3 {
		d, s := limiter.Decide(limit, states["partner-a"], now, 1)
		states["partner-a"] = s
		fmt.Printf("allowed=%v remaining=%d retry-after=%v\n", d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	// allowed=true remaining=1 retry-after=0s
	// allowed=true remaining=0 retry-after=0s
	// allowed=false remaining=0 retry-after=500ms
}

// A Decision prints as what a caller acts on: whether it passed, the
// limit, what remains, when to come back and when the key is full again.
func ExampleDecision_String() {
	limit := limiter.MustNew(limiter.FixedWindow, 2, time.Minute, 0)
	now := time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)
	var s limiter.State
	for range 3 {
		var d limiter.Decision
		d, s = limiter.Decide(limit, s, now, 1)
		fmt.Printf("%+v\n", d)
	}
	d, _ := limiter.Decide(limit, s, now, 3) // more than the limit ever allows
	fmt.Println(d)
	// Output:
	// allowed limit=2 remaining=1 retry-after=0s reset=30s
	// allowed limit=2 remaining=0 retry-after=0s reset=30s
	// denied limit=2 remaining=0 retry-after=30s reset=30s
	// denied limit=2 remaining=0 retry-after=never reset=30s
}
