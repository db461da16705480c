package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/internal/fixedcap"
)

// class is one kind of request and what became of those sent.
type class struct {
	name, path string
	share      float64
	credit     float64 // smooth weighted round-robin's running weight

	mu        sync.Mutex
	res       result
	latencies []time.Duration // of the 2xx answers
}

// result counts one class's requests.
type result struct {
	sent, ok, refused, failed, skipped int
	p50, p99                           time.Duration
}

func (c *class) record(status int, latency time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case status >= 200 && status < 300:
		c.res.ok++
		c.latencies = append(c.latencies, latency)
	case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
		c.res.refused++
	default: // 0: no answer
		c.res.failed++
	}
}

func (c *class) result() result {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.res
	slices.Sort(c.latencies)
	r.p50, r.p99 = percentile(c.latencies, 50), percentile(c.latencies, 99)
	return r
}

// percentile is the nearest-rank q-th percentile of sorted; 0 if empty.
func percentile(sorted []time.Duration, q int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (q*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}

// generator sends the requests.
type generator struct {
	cfg         config
	classes     []*class
	client      *http.Client
	transport   *http.Transport
	wg          sync.WaitGroup
	outstanding chan struct{} // one token per unanswered request
}

func newGenerator(cfg config) *generator {
	t := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: cfg.timeout}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     30 * time.Second,
	}
	return &generator{
		cfg: cfg,
		classes: []*class{
			{name: "critical", path: "/claims/", share: cfg.critical},
			{name: "normal", path: "/history/", share: 1 - cfg.critical - cfg.low},
			{name: "low", path: "/exports/", share: cfg.low},
		},
		client:      &http.Client{Transport: t, Timeout: cfg.timeout},
		transport:   t,
		outstanding: make(chan struct{}, cfg.maxOutstanding),
	}
}

// next picks the class of the next request by smooth weighted round-robin
// (nginx's upstream balancing): every class gains its share, the one with
// the most credit is picked and pays 1. Over n requests each class gets
// its share of n to within one.
func (g *generator) next() *class {
	var best *class
	for _, c := range g.classes {
		c.credit += c.share
		if best == nil || c.credit > best.credit {
			best = c
		}
	}
	best.credit--
	return best
}

// offer sends at cfg.rate for cfg.duration, then waits for every answer.
// Every millisecond it sends the requests that fell due since the last.
func (g *generator) offer(ctx context.Context) {
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	total := int(g.cfg.rate * g.cfg.duration.Seconds())
	for n := 0; n < total; {
		select {
		case <-ctx.Done():
			total = n
			continue
		case <-tick.C:
		}
		due := min(int(g.cfg.rate*time.Since(start).Seconds()), total)
		for ; n < due; n++ {
			g.send(ctx, g.next(), n)
		}
	}
	g.wg.Wait()
}

// send sends one request of c on its own goroutine, or counts it skipped
// when maxOutstanding are unanswered.
func (g *generator) send(ctx context.Context, c *class, n int) {
	select {
	case g.outstanding <- struct{}{}:
	default:
		c.mu.Lock()
		c.res.sent++
		c.res.skipped++
		c.mu.Unlock()
		return
	}
	c.mu.Lock()
	c.res.sent++
	c.mu.Unlock()
	g.wg.Go(func() {
		defer func() { <-g.outstanding }()
		t0 := time.Now()
		status := g.get(ctx, g.cfg.url+c.path+strconv.Itoa(n%1000))
		c.record(status, time.Since(t0))
	})
}

// get sends GET url and reads the body; 0 if there was no answer.
func (g *generator) get(ctx context.Context, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0
	}
	return resp.StatusCode
}

func (g *generator) close() { g.transport.CloseIdleConnections() }

// resetStats starts the upstream's counts again.
func resetStats(ctx context.Context, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/reset", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("reset the upstream's stats: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("reset the upstream's stats: %s", resp.Status)
	}
	return nil
}

// readStats reads the upstream's counts.
func readStats(ctx context.Context, base string) (fixedcap.Stats, error) {
	var st fixedcap.Stats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/stats", nil)
	if err != nil {
		return st, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, fmt.Errorf("read the upstream's stats: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("read the upstream's stats: %w", err)
	}
	return st, nil
}
