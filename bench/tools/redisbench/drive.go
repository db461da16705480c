package main

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// result is what drive measured.
type result struct {
	calls    int
	errors   int
	firstErr error
	elapsed  time.Duration
	lat      []time.Duration // every successful call's latency, sorted
}

func (r result) perSecond() float64 { return float64(r.calls) / r.elapsed.Seconds() }

// quantile returns the q-quantile of the latencies (nearest rank).
func (r result) quantile(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	i := int(q*float64(len(r.lat))+0.5) - 1
	return r.lat[min(max(i, 0), len(r.lat)-1)]
}

// phase values: callers run and discard during warm-up, record while
// measuring, and stop after.
const (
	warming int32 = iota
	measuring
	stopped
)

// caller is one goroutine's tally.
type caller struct {
	lat      []time.Duration
	errors   int
	firstErr error
}

// drive runs call from cfg.concurrency goroutines, each calling it in a
// loop with a sequence number of its own, for cfg.warmup and then for
// cfg.duration, and returns what the measured part did.
func drive(call func(seq int) error, cfg config) (result, error) {
	n := cfg.concurrency
	var phase atomic.Int32
	callers := make([]caller, n)
	var wg sync.WaitGroup
	for g := range callers {
		wg.Add(1)
		go func(c *caller, g int) {
			defer wg.Done()
			c.lat = make([]time.Duration, 0, 1<<16)
			for seq := g; ; seq += n {
				p := phase.Load()
				if p == stopped {
					return
				}
				start := time.Now()
				err := call(seq)
				if p != measuring || phase.Load() != measuring {
					continue
				}
				if err != nil {
					c.errors++
					if c.firstErr == nil {
						c.firstErr = err
					}
					continue
				}
				c.lat = append(c.lat, time.Since(start))
			}
		}(&callers[g], g)
	}
	time.Sleep(cfg.warmup)
	stopProfile, err := startProfile(cfg.cpuprofile)
	if err != nil {
		phase.Store(stopped)
		wg.Wait()
		return result{}, err
	}
	phase.Store(measuring)
	start := time.Now()
	time.Sleep(cfg.duration)
	phase.Store(stopped)
	elapsed := time.Since(start)
	wg.Wait()
	return merge(callers, elapsed), stopProfile()
}

func merge(callers []caller, elapsed time.Duration) result {
	r := result{elapsed: elapsed}
	for _, c := range callers {
		r.lat = append(r.lat, c.lat...)
		r.errors += c.errors
		if r.firstErr == nil {
			r.firstErr = c.firstErr
		}
	}
	r.calls = len(r.lat)
	slices.Sort(r.lat)
	return r
}
