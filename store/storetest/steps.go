package storetest

import (
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// Units for writing steps.
const (
	us     = time.Microsecond
	ms     = time.Millisecond
	sec    = time.Second
	minute = time.Minute
	hour   = time.Hour
	day    = 24 * time.Hour
	year   = 365 * day
)

var (
	// aligned is a multiple of 1ms, 1s, 1m, 1h and 1d since the epoch:
	// every window of those periods starts on it.
	aligned = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// unaligned is 535897µs into its second and 26.535897s into its
	// minute (897µs into its millisecond).
	unaligned = time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)
	// clampMax is the latest time Decide distinguishes, 2^52µs after the
	// epoch (2112-09-17T23:53:47.370496Z); later times are taken as it.
	clampMax = time.UnixMicro(1 << 52)
)

// allow is a step that must be allowed, leaving remaining, with the key
// back at full after reset.
func allow(at time.Duration, cost, remaining int64, reset time.Duration) Step {
	return Step{At: at, Cost: cost, Want: limiter.Decision{Allowed: true, Remaining: remaining, Reset: reset}}
}

// deny is a step that must be denied, with the same request passing
// retryAfter later, and the key back at full after reset.
func deny(at time.Duration, cost, remaining int64, retryAfter, reset time.Duration) Step {
	return Step{At: at, Cost: cost, Want: limiter.Decision{Remaining: remaining, RetryAfter: retryAfter, Reset: reset}}
}

// never is a step whose cost exceeds what the limit can ever allow.
func never(at time.Duration, cost, remaining int64, reset time.Duration) Step {
	return deny(at, cost, remaining, limiter.Never, reset)
}

// on returns s made on key instead of the table's key.
func (s Step) on(key store.Key) Step {
	s.Key = key
	return s
}

// when returns s made at the absolute time t instead of Base+At.
func (s Step) when(t time.Time) Step {
	s.Time = t
	return s
}

// under returns s made under the limit l instead of the table's.
func (s Step) under(l limiter.Limit) Step {
	s.Limit = l
	return s
}

// table builds a Table, filling in each Want.Limit from the step's limit
// (l unless the step has its own): the burst for the bucket algorithms,
// the rate for the windows, 0 for the zero Limit.
func table(name string, l limiter.Limit, base time.Time, steps ...Step) Table {
	for i := range steps {
		steps[i].Want.Limit = steps[i].limit(l).Burst()
	}
	return Table{Name: name, Limit: l, Base: base, Steps: steps}
}

// must is limiter.MustNew.
var must = limiter.MustNew
