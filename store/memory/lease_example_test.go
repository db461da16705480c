package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
)

// A concurrency rule: at most 2 of a partner's requests in flight. The
// Renewer holds each granted lease and renews it while the request runs;
// the request's end releases it.
func ExampleStore_Acquire() {
	s := memory.New(memory.Options{})
	defer s.Close()
	leases := store.NewRenewer(s, store.RenewerOptions{}) // renews every 10s
	defer leases.Close()

	ctx, now := context.Background(), time.Now()
	limit := store.Concurrency{Max: 2, TTL: 30 * time.Second}
	key := store.GroupKey("partner-a", "partner-in-flight")
	var held []store.Lease
	for range 3 {
		d, err := leases.Acquire(ctx, key, limit, now, 1)
		if err != nil {
			fmt.Println("store failed:", err) // the gateway applies its failure policy
			return
		}
		fmt.Printf("allowed=%v in-flight=%d remaining=%d retry-after=%v\n", d.Allowed, d.InFlight, d.Remaining(), d.RetryAfter)
		if d.Allowed {
			held = append(held, d.Lease)
		}
	}
	_ = leases.Release(ctx, held[0], now) // the first request's response has ended
	d, _ := leases.Acquire(ctx, key, limit, now, 1)
	fmt.Printf("after a release: allowed=%v in-flight=%d\n", d.Allowed, d.InFlight)
	// Output:
	// allowed=true in-flight=1 remaining=1 retry-after=0s
	// allowed=true in-flight=2 remaining=0 retry-after=0s
	// allowed=false in-flight=2 remaining=0 retry-after=1s
	// after a release: allowed=true in-flight=2
}
