package throttle_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/throttle"
)

// A gateway protects its upstream: two requests at once at most, a short
// queue, low-priority work shed first. Each request is acquired before it
// is sent and released with the upstream's outcome.
func Example() {
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	th, err := throttle.New(throttle.Config{
		MaxInFlight: 2,
		Queue:       throttle.Queue{MaxLength: 10, MaxWait: time.Second},
		Clock:       clk,
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	a := th.Acquire(ctx, throttle.Request{Priority: throttle.Critical, Client: "claims"})
	b := th.Acquire(ctx, throttle.Request{Client: "partner-a"})
	fmt.Println("a:", a.Admitted, "b:", b.Admitted)

	// The service is full: low-priority work is refused with a Retry-After
	// (a 503 for an HTTP caller), never queued.
	c := th.Acquire(ctx, throttle.Request{Priority: throttle.Low, Client: "reports"})
	fmt.Println("c:", c.Admitted, c.Reason, "Retry-After:", c.RetryAfterSeconds())

	clk.Advance(120 * time.Millisecond)
	a.Release(throttle.Outcome{Status: 200})
	b.Release(throttle.Outcome{Status: 200})
	s := th.Stats()
	fmt.Println("in flight:", s.InFlight, "limit:", s.Limit, "shed low:", s.Refused(throttle.Low, throttle.ReasonShed))
	// Output:
	// a: true b: true
	// c: false shed Retry-After: 1
	// in flight: 0 limit: 2 shed low: 1
}
