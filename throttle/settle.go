package throttle

import "time"

// The upstream statuses settle tells apart (HTTP's numbers; the package
// imports no HTTP).
const (
	statusTooManyRequests    = 429
	statusServiceUnavailable = 503
	statusGatewayTimeout     = 504
)

// Outcome is what happened at the upstream, reported when a slot is
// released. The zero Outcome is an answer that took the time from admission
// to Release.
type Outcome struct {
	// Status is the upstream's HTTP status (0 if not known).
	Status int
	// Latency is the upstream's latency; 0 means the time from admission
	// to Release on the Throttle's clock.
	Latency time.Duration
	// Timeout means the upstream did not answer in time.
	Timeout bool
	// Failed means there was no answer at all (connection refused, reset).
	Failed bool
	// RetryAfter is the upstream's Retry-After (0 if none), parsed by the
	// caller; with Config.UpstreamBackoff a 503 or 429 carrying it holds
	// requests for that long.
	RetryAfter time.Duration
	// Canceled means the caller went away before the upstream answered:
	// the outcome says nothing about the upstream and is not counted.
	Canceled bool
}

// Release gives the slot back and reports the upstream's outcome. A slot is
// given back once: Release does nothing for a refusal, and nothing for a
// Decision whose slot was already released, through it or through any copy
// of it (a Decision is a value: keep it, copy it, defer its Release).
func (d Decision) Release(o Outcome) {
	t, s := d.t, d.s
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clk.Now()
	if s.gen != d.gen {
		return // a copy was released
	}
	s.gen++
	if len(t.free) < t.cfg.MaxInFlight {
		t.free = append(t.free, s)
	}
	t.inFlight--
	t.settle(now, d.start, o)
	t.backoff(now, d.client, o)
	t.dispatch(now)
}

// settle feeds an outcome to the completion rate and the adaptive limit.
// The caller holds t.mu.
//
// Only answers that did the work are latency samples: an upstream 503 or
// 504, a timeout or a failure is a drop (it shrinks the limit and is not a
// latency), a 429 is the upstream refusing one caller (neither), and a
// canceled request is nothing at all. Netflix concurrency-limits #176: a
// dropped request recorded as a near-zero latency keeps the limiter
// dropping; concurrency-limits #146: canceled requests counted as timeouts
// let bad clients shrink the limit.
func (t *Throttle) settle(now, start time.Time, o Outcome) {
	if o.Canceled {
		return
	}
	t.done.add(now)
	if t.adapt == nil {
		return
	}
	switch {
	case o.Timeout || o.Failed || o.Status == statusServiceUnavailable || o.Status == statusGatewayTimeout:
		t.adapt.drops++
	case o.Status == statusTooManyRequests:
	default:
		lat := o.Latency
		if lat == 0 {
			lat = now.Sub(start)
		}
		t.adapt.latency(lat, t.rnd)
	}
	if l, closed := t.adapt.next(now, t.limit); closed {
		t.limit = l
		t.adapt.peak = t.inFlight
	}
}
