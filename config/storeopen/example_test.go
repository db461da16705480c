package storeopen_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/config/storeopen"
)

// A program opens the store its configuration file describes, as the
// gateway does, timing each call to Redis into its own histogram (with
// store type memory, as here, nothing is timed).
func ExampleOpen() {
	file, err := config.Parse("sluice.yaml", []byte(`
listen: 127.0.0.1:8080
upstream: http://127.0.0.1:9000
store: { type: memory, memory: { max_keys: 10000 } }
rules:
  - { name: claims, key: ip, rate: 100/m }
`))
	if err != nil {
		log.Fatal(err)
	}
	redisSeconds := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "redis_seconds", Help: "Redis calls."})
	ctx := context.Background()
	st, err := storeopen.Open(ctx, file.Store, storeopen.Options{
		ObserveShared: func(d time.Duration) { redisSeconds.Observe(d.Seconds()) },
	})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	fmt.Printf("%T\n", st)
	// Output:
	// *memory.Store
}
