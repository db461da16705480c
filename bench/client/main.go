// Command clientbench is bench/client.sh's load: workers that call one
// endpoint behind a rate limit for a fixed time, through one of three
// clients, and count what came back on the wire.
//
//	clientbench -url http://127.0.0.1:8080/ -mode client -workers 8 -duration 10s
//
// Modes:
//
//	naive          a plain http.Client that sends again at once after a 429
//	retryablehttp  github.com/hashicorp/go-retryablehttp v0.7.8 with its
//	               defaults (only its logger is off: it logs every request)
//	client         sluice's client.Transport with its defaults
//
// It prints one line:
//
//	clientbench: mode=<mode> ok=<2xx> seconds=<the run's time> got429=<429s received> errors=<n>
//
// Answers are counted below the client, as they arrive on the wire, so the
// retries a library makes inside one call count too. A client.Transport
// whose next turn is past the end of the run says so (a *client.WaitError)
// and its worker stops.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/sluice-rl/sluice/client"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "clientbench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("clientbench", flag.ContinueOnError)
	url := fs.String("url", "", "the endpoint (required)")
	key := fs.String("key", "key-a", "X-API-Key sent with every request")
	mode := fs.String("mode", "client", "naive | retryablehttp | client")
	workers := fs.Int("workers", 8, "concurrent callers")
	duration := fs.Duration("duration", 10*time.Second, "how long the workers call")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" {
		return fmt.Errorf("-url is required")
	}
	wire := &counting{base: &http.Transport{MaxIdleConnsPerHost: *workers}}
	call, err := caller(*mode, wire)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	var errs atomic.Int64
	var firstErr sync.Once
	var wg sync.WaitGroup
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				err := call(ctx, *url, *key)
				var we *client.WaitError
				if errors.As(err, &we) {
					return // the next turn is past the end of the run
				}
				if err != nil && ctx.Err() == nil {
					errs.Add(1)
					firstErr.Do(func() { fmt.Fprintln(os.Stderr, "clientbench: first error:", err) })
				}
			}
		}()
	}
	wg.Wait()
	wire.base.CloseIdleConnections()
	fmt.Printf("clientbench: mode=%s ok=%d seconds=%.3f got429=%d errors=%d\n",
		*mode, wire.ok.Load(), duration.Seconds(), wire.tooMany.Load(), errs.Load())
	return nil
}

// caller returns one call of the mode: a request and whatever retries the
// client makes of it.
func caller(mode string, wire http.RoundTripper) (func(ctx context.Context, url, key string) error, error) {
	switch mode {
	case "naive":
		c := &http.Client{Transport: wire}
		return func(ctx context.Context, url, key string) error {
			for ctx.Err() == nil { // a 429: again, at once
				code, err := do(c, ctx, url, key)
				if err != nil || code != http.StatusTooManyRequests {
					return err
				}
			}
			return nil
		}, nil
	case "retryablehttp":
		rc := retryablehttp.NewClient()
		rc.Logger = nil
		rc.HTTPClient.Transport = wire
		return func(ctx context.Context, url, key string) error {
			req, err := retryablehttp.NewRequestWithContext(ctx, "GET", url, nil)
			if err != nil {
				return err
			}
			req.Header.Set("X-API-Key", key)
			resp, err := rc.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.Body.Close()
		}, nil
	case "client":
		c := &http.Client{Transport: &client.Transport{Base: wire}}
		return func(ctx context.Context, url, key string) error {
			_, err := do(c, ctx, url, key)
			return err
		}, nil
	}
	return nil, fmt.Errorf("unknown -mode %q (want naive, retryablehttp or client)", mode)
}

// do sends one GET and returns its status.
func do(c *http.Client, ctx context.Context, url, key string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-API-Key", key)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Body.Close()
}

// counting counts the answers as they arrive: 2xx and 429.
type counting struct {
	base    *http.Transport
	ok      atomic.Int64
	tooMany atomic.Int64
}

func (c *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		c.tooMany.Add(1)
	case resp.StatusCode/100 == 2:
		c.ok.Add(1)
	}
	return resp, nil
}
