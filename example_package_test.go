package sluice_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-rl/sluice"
	"github.com/sluice-rl/sluice/limiter"
)

// A limit per key in three lines: here 2 requests a minute per partner,
// in this process's memory.
func Example() {
	lim := sluice.New(limiter.MustNew(limiter.TokenBucket, 2, time.Minute, 0), sluice.Options{})
	defer lim.Close()

	for range 3 {
		fmt.Println("partner-a:", lim.Allow(context.Background(), "partner-a"))
	}
	fmt.Println("partner-b:", lim.Allow(context.Background(), "partner-b"))
	// Output:
	// partner-a: true
	// partner-a: true
	// partner-a: false
	// partner-b: true
}
