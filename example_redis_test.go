package sluice_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/sluice-rl/sluice"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store/redis"
)

// One budget for a fleet: every instance limits on the same Redis, under
// the same Name, decided on Redis TIME. (The example needs a Redis on
// 127.0.0.1:6379, so it is compiled, not run.)
func Example_redis() {
	ctx := context.Background()
	st, err := redis.New(ctx, redis.Options{Addrs: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	lim := sluice.New(limiter.MustNew(limiter.SlidingWindow, 100, time.Minute, 0), sluice.Options{Store: st, Name: "partner-b-api"})

	if err := lim.Wait(ctx, "claims"); err != nil {
		log.Print(err) // Redis unreachable, or the context ended
		return
	}
	fmt.Println("calling partner B")
}
