package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/redis"
)

// workload is one mode's decision and what to release after.
type workload struct {
	call  func(seq int) error
	close func()
}

// floorScript is the least a decision script can do: count and expire.
const floorScript = `local v = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return v`

// benchLimit admits every request of the benchmark, so that every decision
// is allowed and writes its key: the costly path.
var benchLimit = limiter.MustNew(limiter.GCRA, limiter.MaxRate, time.Second, 0)

func open(ctx context.Context, cfg config) (workload, error) {
	if cfg.mode == "floor" {
		return openFloor(ctx, cfg)
	}
	return openStore(ctx, cfg)
}

// openFloor calls floorScript on one key, EVALSHA through rueidis with its
// default options, as the store's client is set up (no client-side cache).
func openFloor(ctx context.Context, cfg config) (workload, error) {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{cfg.addr}, DisableCache: true})
	if err != nil {
		return workload{}, fmt.Errorf("connect to %s: %w", cfg.addr, err)
	}
	if err := client.Do(ctx, client.B().Ping().Build()).Error(); err != nil {
		client.Close()
		return workload{}, fmt.Errorf("ping %s: %w", cfg.addr, err)
	}
	src := floorScript
	if cfg.script != "" {
		b, err := os.ReadFile(cfg.script)
		if err != nil {
			client.Close()
			return workload{}, err
		}
		src = string(b)
	}
	script := rueidis.NewLuaScript(src)
	keys, args := []string{"redisbench:{floor}"}, strings.Fields(cfg.scriptArgs)
	call := func(int) error {
		return script.Exec(context.Background(), client, keys, args).Error()
	}
	return workload{call: call, close: client.Close}, nil
}

// openStore decides with sluice's Redis store, reading Redis TIME, on one
// key (hot) or cfg.keys keys, named as the gateway names a client's key.
func openStore(ctx context.Context, cfg config) (workload, error) {
	s, err := redis.New(ctx, redis.Options{Addrs: []string{cfg.addr}, Prefix: "redisbench:"})
	if err != nil {
		return workload{}, err
	}
	n := 1
	if cfg.mode == "keys" {
		n = cfg.keys
	}
	keys := make([]store.Key, n)
	for i := range keys {
		keys[i] = store.NewKey("bench", "client", "partner-"+strconv.Itoa(i))
	}
	call := func(seq int) error {
		k := keys[seq%n]
		_, err := s.Decide(context.Background(), k, benchLimit, time.Time{}, 1)
		return err
	}
	if cfg.api == "batch" {
		call = func(seq int) error {
			reqs := []store.Request{{Key: keys[seq%n], Limit: benchLimit, Cost: 1}}
			res, err := s.DecideEach(context.Background(), nil, reqs, time.Time{})
			if err == nil {
				err = res[0].Err
			}
			return err
		}
	}
	return workload{call: call, close: func() { s.Close() }}, nil
}
