package sluice_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-rl/sluice"
	"github.com/sluice-rl/sluice/limiter"
)

// The three lines: a limiter, closed when done, asked for each request.
func Example_start() {
	ctx := context.Background()
	lim := sluice.New(limiter.MustNew(limiter.TokenBucket, 100, time.Minute, 20), sluice.Options{})
	defer lim.Close()
	if !lim.Allow(ctx, "partner-a") {
		fmt.Println("over the limit: refuse, drop or come back later")
		return
	}
	fmt.Println("go on")
	// Output:
	// go on
}
