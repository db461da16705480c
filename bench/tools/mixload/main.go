// Command mixload offers a gateway an open-loop load of mixed request
// classes and reports, per class, what became of it. It is the load of
// bench/run.sh protect, where wrk will not do: wrk sends one kind of
// request as fast as its connections allow, while protect needs a fixed
// offered rate (3× the upstream's capacity) whatever the answers' latency,
// split between priorities that the gateway tells apart by path.
//
//	mixload -url http://127.0.0.1:8080 -rate 960 -duration 10s -stats http://127.0.0.1:9001
//
// Requests leave at -rate per second, each on its own goroutine, spread
// over the classes by smooth weighted round-robin, so the shares are exact
// and interleaved: critical (GET /claims/N, share -critical), low (GET
// /exports/N, share -low) and normal (GET /history/N, the rest). A request
// that would find -max-outstanding requests unanswered is not sent and
// counted as skipped (the generator fell behind; the figures are then not
// the offered load). With -stats (the upstream's stats address, see
// bench/tools/upstream) the upstream's counts are reset before and read
// after.
//
// Output, one line per class, then one for the upstream:
//
//	mixload: class=critical sent=<n> ok=<2xx> refused=<429 or 503> failed=<other or no answer> skipped=<n> p50_ms=<ms> p99_ms=<ms>
//	mixload: upstream max_in_flight=<n> served=<n>
//
// The latencies are those of the 2xx answers, from sending to the end of
// the body.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// config is the parsed command line.
type config struct {
	url            string
	rate           float64
	duration       time.Duration
	critical, low  float64
	stats          string
	timeout        time.Duration
	maxOutstanding int
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "mixload:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mixload:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("mixload", flag.ContinueOnError)
	fs.StringVar(&c.url, "url", "", "the gateway's base URL, such as http://127.0.0.1:8080 (required)")
	fs.Float64Var(&c.rate, "rate", 100, "requests per second offered, whatever the answers")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to send")
	fs.Float64Var(&c.critical, "critical", 0.2, "share of critical requests (GET /claims/N)")
	fs.Float64Var(&c.low, "low", 0.4, "share of low requests (GET /exports/N); normal (GET /history/N) is the rest")
	fs.StringVar(&c.stats, "stats", "", "the upstream's stats base URL (bench/tools/upstream -stats), reset before and read after")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "bound on each request")
	fs.IntVar(&c.maxOutstanding, "max-outstanding", 10000, "most unanswered requests; beyond, a request is skipped")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case c.url == "":
		return c, errors.New("-url is required")
	case c.rate <= 0 || c.duration <= 0 || c.timeout <= 0 || c.maxOutstanding <= 0:
		return c, errors.New("-rate, -duration, -timeout and -max-outstanding must be above 0")
	case c.critical < 0 || c.low < 0 || c.critical+c.low > 1:
		return c, fmt.Errorf("-critical %v and -low %v: want shares from 0 whose sum is at most 1", c.critical, c.low)
	}
	return c, nil
}

// run offers the load and writes the report to out.
func run(ctx context.Context, cfg config, out io.Writer) error {
	if cfg.stats != "" {
		if err := resetStats(ctx, cfg.stats); err != nil {
			return err
		}
	}
	g := newGenerator(cfg)
	defer g.close()
	g.offer(ctx)
	for _, c := range g.classes {
		r := c.result()
		fmt.Fprintf(out, "mixload: class=%s sent=%d ok=%d refused=%d failed=%d skipped=%d p50_ms=%.2f p99_ms=%.2f\n",
			c.name, r.sent, r.ok, r.refused, r.failed, r.skipped, ms(r.p50), ms(r.p99))
	}
	if cfg.stats != "" {
		st, err := readStats(ctx, cfg.stats)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "mixload: upstream max_in_flight=%d served=%d\n", st.MaxInFlight, st.Served)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
