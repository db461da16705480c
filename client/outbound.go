package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/throttle"
)

// Outbound is a limit of the caller's own on its calls to a dependency, so
// that a program does not hurt a partner that is failing or slow: a rate,
// and a cap on requests in flight. Each part is optional.
type Outbound struct {
	// Limit is the rate, in any of sluice's algorithms (limiter.New); the
	// zero Limit means no rate. A request over it waits for its turn (at
	// most MaxWait and the request's deadline; otherwise it fails at once
	// with a *WaitError).
	Limit limiter.Limit
	// Store decides the rate, required with Limit: a memory store
	// (store/memory) for one process, a Redis store (store/redis) for
	// a fleet of workers that share one budget toward the dependency. A
	// store error fails the request (store/failover chooses otherwise).
	Store store.Store
	// Key names the budget in Store; "" means the request's host. Workers
	// that share a budget use the same Key.
	Key string

	// MaxInFlight caps the requests at the dependency at once (from
	// sending to the answer's headers); 0 means no cap. Requests over the
	// cap wait in line for a slot, at most MaxWait.
	MaxInFlight int
	// MinInFlight is the least the cap shrinks to when the dependency
	// answers 503 or 504, times out or fails; 0 means a quarter of
	// MaxInFlight (at least 1). The cap grows back, a tenth per healthy
	// second, when the dependency recovers (package throttle's adaptive
	// limit).
	MinInFlight int
	// LatencyTarget, when set, also shrinks the cap while the dependency's
	// p99 latency is above it; 0 means only failures shrink it.
	LatencyTarget time.Duration
}

// noLatencyTarget stands for "no latency objective" in the throttle, which
// needs one: a p99 above a day does not happen.
const noLatencyTarget = 24 * time.Hour

// maxQueue bounds the requests waiting for an in-flight slot.
const maxQueue = 4096

// outbound is an Outbound in use.
type outbound struct {
	cfg Outbound
	clk clock.Clock
	th  *throttle.Throttle // nil without MaxInFlight
}

func newOutbound(o Outbound, clk clock.Clock, maxWait time.Duration) (*outbound, error) {
	if !o.Limit.IsZero() && o.Store == nil {
		return nil, errors.New("client: Outbound.Limit needs a Store (store/memory for one process, store/redis for a fleet)")
	}
	if o.MaxInFlight < 0 || o.MinInFlight < 0 || o.MinInFlight > o.MaxInFlight || o.LatencyTarget < 0 {
		return nil, fmt.Errorf("client: Outbound.MaxInFlight %d, MinInFlight %d, LatencyTarget %v: want 0 <= MinInFlight <= MaxInFlight and a target of 0 or more",
			o.MaxInFlight, o.MinInFlight, o.LatencyTarget)
	}
	out := &outbound{cfg: o, clk: clk}
	if o.MaxInFlight == 0 {
		return out, nil
	}
	adaptive := &throttle.Adaptive{MinInFlight: o.MinInFlight, LatencyTarget: o.LatencyTarget}
	if adaptive.MinInFlight == 0 {
		adaptive.MinInFlight = max(o.MaxInFlight/4, 1)
	}
	if adaptive.LatencyTarget == 0 {
		adaptive.LatencyTarget = noLatencyTarget
	}
	th, err := throttle.New(throttle.Config{MaxInFlight: o.MaxInFlight, Adaptive: adaptive,
		Queue: throttle.Queue{MaxLength: maxQueue, MaxWait: maxWait}, Clock: clk})
	if err != nil {
		return nil, fmt.Errorf("client: Outbound: %w", err)
	}
	out.th = th
	return out, nil
}

// releaseFunc reports an attempt's outcome and gives its slot back.
type releaseFunc func(ctx context.Context, resp *http.Response, err error, latency time.Duration)

func noRelease(context.Context, *http.Response, error, time.Duration) {}

// acquire waits for the rate and a slot; o may be nil (no limit).
func (o *outbound) acquire(ctx context.Context, host string, s *state) (releaseFunc, error) {
	if o == nil {
		return noRelease, nil
	}
	if !o.cfg.Limit.IsZero() {
		if err := o.waitRate(ctx, host, s); err != nil {
			return nil, err
		}
	}
	if o.th == nil {
		return noRelease, nil
	}
	d := o.th.Acquire(ctx, throttle.Request{})
	if !d.Admitted {
		if d.Reason == throttle.ReasonCanceled {
			return nil, ctx.Err()
		}
		return nil, &WaitError{Host: host, Cause: "outbound in-flight limit (" + d.Reason.String() + ")", Wait: d.RetryAfter, Bound: "MaxWait " + s.maxWait.String()}
	}
	return func(ctx context.Context, resp *http.Response, err error, latency time.Duration) {
		d.Release(outcome(ctx, resp, err, latency))
	}, nil
}

// waitRate waits until the rate lets one request pass, and spends it.
func (o *outbound) waitRate(ctx context.Context, host string, s *state) error {
	key := o.cfg.Key
	if key == "" {
		key = host
	}
	sk := store.NewKey("client-outbound", key)
	for {
		d, err := o.cfg.Store.Decide(ctx, sk, o.cfg.Limit, o.clk.Now(), 1)
		if err != nil {
			return fmt.Errorf("client: %s: outbound rate: %w", host, err)
		}
		if d.Allowed {
			return nil
		}
		if err := s.check(ctx, host, "outbound rate", d.RetryAfter); err != nil {
			return err
		}
		if _, err := s.sleep(ctx, d.RetryAfter, nil); err != nil {
			return err
		}
	}
}

// outcome tells the throttle what the dependency did: an answer, a
// timeout, a failure, or nothing it can be blamed for (the caller gave up).
func outcome(ctx context.Context, resp *http.Response, err error, latency time.Duration) throttle.Outcome {
	if err == nil {
		return throttle.Outcome{Status: resp.StatusCode, Latency: latency}
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled:
		return throttle.Outcome{Canceled: true}
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return throttle.Outcome{Timeout: true, Latency: latency}
	}
	return throttle.Outcome{Failed: true, Latency: latency}
}
