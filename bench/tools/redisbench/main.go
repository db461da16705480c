// Command redisbench drives Redis with rate-limiting decisions from many
// concurrent callers and prints decisions per second and their latency. It
// is the driver of bench/redis.sh:
//
//	redisbench -addr 127.0.0.1:6390 -mode hot -duration 5s -concurrency 64
//
// Modes:
//
//	floor  a trivial Lua script (INCR and PEXPIRE of one key) through
//	       rueidis, the most a script per decision can do on this machine
//	hot    sluice's Redis store (store/redis, Redis TIME), every caller on
//	       one key, gcra with a rate so high that every decision is allowed
//	       and writes
//	keys   the same spread over -keys keys (default 100,000)
//
// At such a rate a key's state drains within a microsecond, so the store
// sets a 1ms TTL and most decisions find the key gone and write it anew.
// -api batch calls Store.DecideEach with one request, as the gateway does,
// instead of Store.Decide.
//
// With -script FILE and -args, mode floor runs another script on its one
// key, so that a variant of a store script can be weighed against the
// floor on the same machine. -cpuprofile writes a CPU profile of the
// measured part, for go tool pprof.
//
// The last line is
//
//	redisbench: mode=hot decisions=<per second> p50_ms=<ms> p99_ms=<ms> calls=<n> errors=<n>
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

// config is the parsed command line.
type config struct {
	addr        string
	mode        string
	duration    time.Duration
	warmup      time.Duration
	concurrency int
	keys        int
	api         string
	cpuprofile  string
	script      string
	scriptArgs  string
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "redisbench:", err)
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "redisbench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("redisbench", flag.ContinueOnError)
	fs.StringVar(&c.addr, "addr", "", "Redis address, host:port (required)")
	fs.StringVar(&c.mode, "mode", "hot", "floor | hot | keys")
	fs.DurationVar(&c.duration, "duration", 5*time.Second, "how long to measure")
	fs.DurationVar(&c.warmup, "warmup", 500*time.Millisecond, "how long to run before measuring")
	fs.IntVar(&c.concurrency, "concurrency", 64, "concurrent callers")
	fs.IntVar(&c.keys, "keys", 100_000, "number of keys in mode keys")
	fs.StringVar(&c.api, "api", "decide", "store call in modes hot and keys: decide (Store.Decide) | batch (Store.DecideEach of one request, as the gateway calls it)")
	fs.StringVar(&c.script, "script", "", "mode floor: run the Lua script in this file instead of INCR+PEXPIRE (to weigh a script's cost)")
	fs.StringVar(&c.scriptArgs, "args", "60000", "mode floor: the script's ARGV, separated by spaces")
	fs.StringVar(&c.cpuprofile, "cpuprofile", "", "write a CPU profile of the measured part to this file")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case c.addr == "":
		return c, errors.New("-addr is required")
	case c.mode != "floor" && c.mode != "hot" && c.mode != "keys":
		return c, fmt.Errorf("-mode %q: want floor, hot or keys", c.mode)
	case c.api != "decide" && c.api != "batch":
		return c, fmt.Errorf("-api %q: want decide or batch", c.api)
	case c.duration <= 0 || c.warmup < 0:
		return c, errors.New("-duration must be positive and -warmup not negative")
	case c.concurrency < 1 || c.keys < 1:
		return c, errors.New("-concurrency and -keys must be at least 1")
	}
	return c, nil
}

// run opens the workload of cfg.mode, drives it and prints the result.
func run(cfg config) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	w, err := open(ctx, cfg)
	cancel()
	if err != nil {
		return err
	}
	defer w.close()
	res, err := drive(w.call, cfg)
	if err != nil {
		return err
	}
	if res.calls == 0 {
		return fmt.Errorf("no call succeeded (%d errors; first: %v)", res.errors, res.firstErr)
	}
	if res.firstErr != nil {
		fmt.Fprintf(os.Stderr, "redisbench: %d errors; first: %v\n", res.errors, res.firstErr)
	}
	fmt.Printf("redisbench: mode=%s decisions=%.0f p50_ms=%.3f p99_ms=%.3f calls=%d errors=%d\n",
		cfg.mode, res.perSecond(), ms(res.quantile(0.50)), ms(res.quantile(0.99)), res.calls, res.errors)
	return nil
}

// startProfile starts a CPU profile into path, if path is set, and returns
// what stops it.
func startProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
