package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/sluice-rl/sluice"
	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
)

// Wait blocks until the request's turn, or refuses at once when the turn
// comes after the context's deadline.
func ExampleLimiter_Wait() {
	lim := sluice.New(limiter.MustNew(limiter.GCRA, 20, time.Second, 1), sluice.Options{}) // one every 50ms
	defer lim.Close()

	ctx := context.Background()
	start := time.Now()
	for range 3 {
		if err := lim.Wait(ctx, "partner-api"); err != nil { // the 2nd and 3rd wait for their turn
			log.Fatal(err)
		}
	}
	fmt.Println("waited 100ms or more:", time.Since(start) >= 100*time.Millisecond)

	hourly := sluice.New(limiter.MustNew(limiter.GCRA, 1, time.Hour, 1), sluice.Options{})
	defer hourly.Close()
	hourly.Allow(ctx, "report") // the next turn is in an hour
	short, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := hourly.Wait(short, "report")
	fmt.Println("refused at once:", errors.Is(err, sluice.ErrDeadline))
	// Output:
	// waited 100ms or more: true
	// refused at once: true
}

// Reserve grants a turn ahead, its cost counted at once; Cancel gives it
// back when the work will not be done after all. (The fake clock only
// makes the output exact.)
func ExampleLimiter_Reserve() {
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	lim := sluice.New(limiter.MustNew(limiter.GCRA, 10, time.Second, 1), sluice.Options{Clock: clk})
	defer lim.Close()

	ctx := context.Background()
	for range 3 {
		r, err := lim.Reserve(ctx, "export")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("go in", r.Delay())
	}
	clk.Advance(150 * time.Millisecond)
	r, _ := lim.Reserve(ctx, "export")
	fmt.Println("go in", r.Delay())
	_ = r.Cancel(ctx) // not going after all: the next caller gets this turn
	r, _ = lim.Reserve(ctx, "export")
	fmt.Println("go in", r.Delay())
	// Output:
	// go in 0s
	// go in 100ms
	// go in 200ms
	// go in 150ms
	// go in 150ms
}

// Peek looks at a key without spending, Reset forgets one key's count, and
// Options.LimitFor gives some keys a limit of their own.
func ExampleLimiter_Peek() {
	contracts := map[string]limiter.Limit{"partner-b": limiter.MustNew(limiter.TokenBucket, 10, time.Minute, 10)}
	lim := sluice.New(limiter.MustNew(limiter.TokenBucket, 2, time.Minute, 2), sluice.Options{
		LimitFor: func(key string) (limiter.Limit, bool) { l, ok := contracts[key]; return l, ok }, // in a program: guard a changing map with a lock
	})
	defer lim.Close()

	ctx := context.Background()
	lim.Allow(ctx, "partner-a")
	d, _ := lim.Peek(ctx, "partner-a")
	fmt.Println("partner-a remaining:", d.Remaining)
	_ = lim.Reset(ctx, "partner-a") // an operator's fresh start
	d, _ = lim.Peek(ctx, "partner-a")
	fmt.Println("partner-a after Reset:", d.Remaining)
	d, _ = lim.Peek(ctx, "partner-b")
	fmt.Println("partner-b's own limit:", d.Limit)
	// Output:
	// partner-a remaining: 1
	// partner-a after Reset: 2
	// partner-b's own limit: 10
}
