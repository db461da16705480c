package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
)

func Example() {
	s := memory.New(memory.Options{MaxKeys: 100_000})
	defer s.Close()

	limit := limiter.MustNew(limiter.FixedWindow, 2, time.Minute, 0)
	key := store.NewKey("claims", "partner-a")
	now := time.Date(2030, 1, 1, 12, 0, 30, 0, time.UTC)
	for range 3 {
		d, err := s.Decide(context.Background(), key, limit, now, 1)
		if err != nil {
			fmt.Println("store failed:", err) // the gateway applies its failure policy
			return
		}
		fmt.Printf("allowed=%v remaining=%d retry-after=%v\n", d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	// allowed=true remaining=1 retry-after=0s
	// allowed=true remaining=0 retry-after=0s
	// allowed=false remaining=0 retry-after=30s
}
