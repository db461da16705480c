package throttle

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sluice-rl/sluice/clock"
)

// Config is what a Throttle enforces. Only MaxInFlight is required; every
// other field's zero value is its default.
type Config struct {
	// MaxInFlight is the hard ceiling: at most this many requests hold a
	// slot at once (> 0). It is never exceeded.
	MaxInFlight int
	// Adaptive, when set, lets the limit follow the upstream's latency
	// below MaxInFlight; nil keeps the limit at MaxInFlight.
	Adaptive *Adaptive
	// Queue lets requests wait for a slot over the limit; without it a
	// request that finds the service full is refused at once.
	Queue Queue
	// ShedFrom is where early refusals start, as a share of the limit in
	// (0, 1]; 0 means 0.8. From ShedFrom × limit requests in flight on,
	// Degrade requests are refused and a share of Low requests growing to
	// all of them at the limit.
	ShedFrom float64
	// UpstreamBackoff obeys the upstream's Retry-After: after a 503 with
	// one, non-critical requests are refused for that long; after a 429
	// with one, that caller's requests are (ReasonUpstreamBackoff).
	UpstreamBackoff bool
	// MaxBackoff caps how long one Retry-After holds; 0 means a minute.
	MaxBackoff time.Duration
	// Clock tells the time; nil means clock.Real. It is read with the
	// Throttle's lock held.
	Clock clock.Clock
	// Rand returns a uniform number in [0, 1) for early shedding and for
	// the adaptive limit's sample of latencies; nil means math/rand/v2's
	// Float64. It is called with the Throttle's lock held.
	Rand func() float64
}

// defaultShedFrom is ShedFrom's default.
const defaultShedFrom = 0.8

// Queue configures waiting for a slot.
type Queue struct {
	// MaxLength is how many requests may wait at once; 0 means no queue.
	MaxLength int
	// MaxWait bounds the wait (0: no bound but the caller's context). A
	// request expected to wait longer is refused at once, and one that has
	// waited MaxWait without a slot is refused then, together with the
	// waiters of lower priority behind it (ReasonWaitTooLong).
	MaxWait time.Duration
}

// fill puts the defaults into zero fields.
func (c *Config) fill() {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	if c.ShedFrom == 0 {
		c.ShedFrom = defaultShedFrom
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = defaultMaxBackoff
	}
}

// check reports every field out of range, each naming its field.
func (c *Config) check() error {
	var errs []error
	if c.MaxInFlight <= 0 {
		errs = append(errs, fmt.Errorf("throttle: max_in_flight %d: want a whole number above 0", c.MaxInFlight))
	}
	if c.Adaptive != nil {
		errs = append(errs, c.Adaptive.check(c.MaxInFlight)...)
	}
	if c.Queue.MaxLength < 0 {
		errs = append(errs, fmt.Errorf("throttle: queue max_length %d: want 0 (no queue) or more", c.Queue.MaxLength))
	}
	if c.ShedFrom < 0 || c.ShedFrom > 1 || c.ShedFrom != c.ShedFrom {
		errs = append(errs, fmt.Errorf("throttle: shed_from %v: want a share of the limit above 0 and at most 1", c.ShedFrom))
	}
	if c.MaxBackoff < 0 {
		errs = append(errs, fmt.Errorf("throttle: max_backoff %v: want 0 (a minute) or more", c.MaxBackoff))
	}
	if c.Queue.MaxWait < 0 {
		errs = append(errs, fmt.Errorf("throttle: queue max_wait %v: want 0 (no bound) or more", c.Queue.MaxWait))
	}
	return errors.Join(errs...)
}

// Check reports what New and Update would refuse in c, each field named:
// so that a caller updating several Throttles can refuse all or none.
func (c Config) Check() error { return c.check() }
