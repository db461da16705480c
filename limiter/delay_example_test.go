package limiter_test

import (
	"fmt"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// A leaky bucket of 10 a second with room for 1 and a delay of 300ms is a
// queue: the first request passes at once, the next three are held for
// their turns, 100ms apart, and the fifth would wait too long.
func ExampleLimit_WithDelay() {
	l, err := limiter.MustNew(limiter.LeakyBucket, 10, time.Second, 1).WithDelay(300 * time.Millisecond)
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var s limiter.State
	var held limiter.Decision
	for i := range 5 {
		var d limiter.Decision
		d, s = limiter.Decide(l, s, now, 1)
		fmt.Printf("request %d: allowed %v, held %v, retry after %v\n", i+1, d.Allowed, d.Delay, d.RetryAfter)
		if d.Delay > 0 {
			held = d
		}
	}
	// The last held caller leaves: its turn is given back, and taken again.
	fmt.Println("given back:", l.Cancel(&s, held.Reservation, 1))
	d, _ := limiter.Decide(l, s, now, 1)
	fmt.Printf("next: held %v\n", d.Delay)
	// Output:
	// request 1: allowed true, held 0s, retry after 0s
	// request 2: allowed true, held 100ms, retry after 0s
	// request 3: allowed true, held 200ms, retry after 0s
	// request 4: allowed true, held 300ms, retry after 0s
	// request 5: allowed false, held 0s, retry after 100ms
	// given back: true
	// next: held 300ms
}
