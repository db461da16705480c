package redis_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/redis"
)

// A Store shared by every instance of a gateway: each decision reads Redis
// TIME, so the instances share one counter per key and one clock. (The
// example needs a Redis on 127.0.0.1:6379, so it is compiled, not run.)
func Example() {
	ctx := context.Background()
	s, err := redis.New(ctx, redis.Options{Addrs: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	limit := limiter.MustNew(limiter.SlidingWindow, 100, time.Minute, 0)
	d, err := s.Decide(ctx, store.RawKey("claims/partner-a"), limit, time.Now(), 1)
	if err != nil {
		log.Printf("no decision (Redis unreachable?): %v", err) // the failure policy decides
		return
	}
	fmt.Println(d.Allowed, d.Remaining)
}
