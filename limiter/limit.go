package limiter

import (
	"fmt"
	"time"
)

// Algorithm names one of the six rate-limiting algorithms. The zero value is
// not an algorithm; a Limit built from it denies everything.
type Algorithm uint8

// The algorithms. Their names in configuration are the String values.
const (
	FixedWindow   Algorithm = iota + 1 // "fixed_window"
	SlidingWindow                      // "sliding_window"
	SlidingLog                         // "sliding_log"
	TokenBucket                        // "token_bucket"
	GCRA                               // "gcra"
	LeakyBucket                        // "leaky_bucket"
)

var algorithmNames = [...]string{
	FixedWindow:   "fixed_window",
	SlidingWindow: "sliding_window",
	SlidingLog:    "sliding_log",
	TokenBucket:   "token_bucket",
	GCRA:          "gcra",
	LeakyBucket:   "leaky_bucket",
}

// Algorithms lists every algorithm, in the order of the constants.
var Algorithms = []Algorithm{FixedWindow, SlidingWindow, SlidingLog, TokenBucket, GCRA, LeakyBucket}

// String returns the configuration name of a, such as "sliding_window".
func (a Algorithm) String() string {
	if a.valid() {
		return algorithmNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

func (a Algorithm) valid() bool { return a >= FixedWindow && a <= LeakyBucket }

// HasBurst reports whether the algorithm is a bucket with a size of its own
// (token_bucket, gcra, leaky_bucket). For the window algorithms the burst is
// the rate.
func (a Algorithm) HasBurst() bool { return a == TokenBucket || a == GCRA || a == LeakyBucket }

// ParseAlgorithm returns the algorithm with the configuration name s.
func ParseAlgorithm(s string) (Algorithm, error) {
	for _, a := range Algorithms {
		if algorithmNames[a] == s {
			return a, nil
		}
	}
	return 0, fmt.Errorf("limiter: unknown algorithm %q (want %s)", s, algorithmList)
}

// algorithmList names the algorithms for error messages.
const algorithmList = "fixed_window, sliding_window, sliding_log, token_bucket, gcra or leaky_bucket"

// Bounds of a Limit. They keep every computation exact in int64 and in the
// IEEE-754 doubles of Redis's Lua (integers up to 2^53), so that the memory
// store and the Redis store decide alike.
const (
	MinPeriod   = time.Millisecond
	MaxPeriod   = 366 * 24 * time.Hour
	MaxRate     = 1_000_000_000 // requests per period
	MaxBurst    = 1_000_000_000
	MaxLogRate  = 10_000 // sliding_log stores one entry per admitted request
	MaxDelay    = time.Hour
	exactLimit  = 1 << 53
	maxTimeUsec = 1 << 52 // about the year 2112; later times are clamped
)

// Limit is a validated rate limit: Rate requests per Period, with a Burst for
// the bucket algorithms. Build one with New. Limit is a small value; the zero
// Limit is valid to use and denies everything.
type Limit struct {
	alg    Algorithm
	rate   int64
	burst  int64 // capacity: rate for windows, burst for buckets
	period int64 // microseconds
	// The emission interval period/rate is p/n microseconds, p and n
	// coprime. Bucket levels count in units of 1/n microsecond: one request
	// is p units and every microsecond drains n units.
	p, n int64
	full int64 // top/n: a full bucket's drain time in whole microseconds
	// A delay of d µs lets requests queue beyond the burst: queue = d*n
	// units above the capacity burst*p; top is burst*p + queue.
	queue, top int64
}

// New validates and builds a limit of rate requests per period. burst is the
// bucket size of token_bucket, gcra and leaky_bucket (0 means rate); the
// window algorithms take no burst and reject one that differs from rate. A
// limit it refuses gives a *LimitError naming the argument at fault.
func New(alg Algorithm, rate int64, period time.Duration, burst int64) (Limit, error) {
	if !alg.valid() {
		return Limit{}, limitErr(FieldAlgorithm, "unknown algorithm %d (want %s)", alg, algorithmList)
	}
	if rate < 1 || rate > MaxRate {
		return Limit{}, limitErr(FieldRate, "rate %d out of range (1 to %d per period)", rate, MaxRate)
	}
	if period < MinPeriod || period > MaxPeriod {
		return Limit{}, limitErr(FieldPeriod, "period %v out of range (%v to %v)", period, MinPeriod, MaxPeriod)
	}
	if period%time.Microsecond != 0 {
		return Limit{}, limitErr(FieldPeriod, "period %v is not a whole number of microseconds", period)
	}
	if alg == SlidingLog && rate > MaxLogRate {
		return Limit{}, limitErr(FieldRate, "sliding_log rate %d too large (at most %d per period; it stores one entry per request: use sliding_window or gcra)", rate, MaxLogRate)
	}
	if burst == 0 {
		burst = rate
	}
	if !alg.HasBurst() && burst != rate {
		return Limit{}, limitErr(FieldBurst, "%v takes no burst (got %d; only token_bucket, gcra and leaky_bucket have one)", alg, burst)
	}
	if burst < 1 || burst > MaxBurst {
		return Limit{}, limitErr(FieldBurst, "burst %d out of range (1 to %d)", burst, MaxBurst)
	}
	us := int64(period / time.Microsecond)
	g := gcd(us, rate)
	l := Limit{alg: alg, rate: rate, burst: burst, period: us, p: us / g, n: rate / g}
	if alg.HasBurst() {
		if l.burst > (exactLimit-l.n)/l.p || l.burst*l.p+l.n > exactLimit { // the first test keeps the product from overflowing
			return Limit{}, limitErr(FieldBurst, "%d/%v with burst %d cannot be computed exactly (burst x period/rate too fine; round the rate or period, or lower the burst)", rate, period, burst)
		}
		l.top = l.burst * l.p
		l.full = l.top / l.n
	}
	return l, nil
}

// WithDelay returns l holding requests for their turn: a request of a
// bucket algorithm that would be denied, but would pass within delay, is
// allowed with Decision.Delay, the time it must be held before it goes on.
// Its cost is reserved at once, so later requests queue behind it, and
// what passes on at the end of the holds obeys the bucket's guarantee.
// Only token_bucket, gcra and leaky_bucket take a delay (0 takes it away);
// it is at most MaxDelay, a whole number of microseconds, and small enough
// that the queue it allows is counted exactly (burst*p + delay*n + n at
// most 2^53). A limit it refuses gives a *LimitError with FieldDelay.
func (l Limit) WithDelay(delay time.Duration) (Limit, error) {
	switch {
	case delay == 0:
	case !l.alg.HasBurst():
		return Limit{}, limitErr(FieldDelay, "%v takes no delay (only token_bucket, gcra and leaky_bucket hold requests for their turn)", l.alg)
	case delay < 0 || delay > MaxDelay:
		return Limit{}, limitErr(FieldDelay, "delay %v out of range (0 to %v)", delay, MaxDelay)
	case delay%time.Microsecond != 0:
		return Limit{}, limitErr(FieldDelay, "delay %v is not a whole number of microseconds", delay)
	}
	us := int64(delay / time.Microsecond)
	capacity := l.burst * l.p
	if us > (exactLimit-capacity-l.n)/l.n {
		return Limit{}, limitErr(FieldDelay, "delay %v on %v cannot be counted exactly (at most %v)", delay, l, usec((exactLimit-capacity-l.n)/l.n))
	}
	l.queue, l.top = us*l.n, capacity+us*l.n
	l.full = l.top / l.n
	return l, nil
}

// Delay returns how long a request may be held for its turn (WithDelay).
func (l Limit) Delay() time.Duration {
	if l.queue == 0 {
		return 0
	}
	return usec(l.queue / l.n)
}

// Field names the argument of New at fault in a LimitError.
type Field uint8

// The arguments of New.
const (
	FieldAlgorithm Field = iota + 1
	FieldRate
	FieldPeriod
	FieldBurst
	FieldDelay // of WithDelay
)

var fieldNames = []string{FieldAlgorithm: "algorithm", FieldRate: "rate", FieldPeriod: "period", FieldBurst: "burst", FieldDelay: "delay"}

// String returns the argument's name: algorithm, rate, period, burst or delay.
func (f Field) String() string {
	if int(f) < len(fieldNames) && f > 0 {
		return fieldNames[f]
	}
	return fmt.Sprintf("Field(%d)", uint8(f))
}

// LimitError is why New refused a limit: Field is the argument at fault
// (a burst that cannot be computed exactly blames the burst), Msg what is
// wrong with it and what would be accepted.
type LimitError struct {
	Field Field
	Msg   string
}

func (e *LimitError) Error() string { return "limiter: " + e.Msg }

func limitErr(f Field, format string, args ...any) *LimitError {
	return &LimitError{Field: f, Msg: fmt.Sprintf(format, args...)}
}

// MustNew is New for limits known to be valid; it panics otherwise. It is
// meant for tests and examples.
func MustNew(alg Algorithm, rate int64, period time.Duration, burst int64) Limit {
	l, err := New(alg, rate, period, burst)
	if err != nil {
		panic(err)
	}
	return l
}

// Algorithm returns the limit's algorithm.
func (l Limit) Algorithm() Algorithm { return l.alg }

// Rate returns the number of requests allowed per Period.
func (l Limit) Rate() int64 { return l.rate }

// Period returns the period the rate is counted over.
func (l Limit) Period() time.Duration { return time.Duration(l.period) * time.Microsecond }

// Burst returns the most that can pass at once: the bucket size for the
// bucket algorithms, the rate for the window algorithms.
func (l Limit) Burst() int64 { return l.burst }

// Interval returns the emission interval p/n in microseconds as a reduced
// fraction: one request's worth of refill takes p/n microseconds. Stores that
// mirror the bucket algorithms use it.
func (l Limit) Interval() (p, n int64) { return l.p, l.n }

// Same reports whether l and o are the same limit: the same algorithm,
// rate, period and burst (the rest follows from them). It is l == o
// without the call to a comparison function that == on a Limit compiles
// to, for a store's hot path, but for the delay: a state reads the same
// under any delay, so a changed delay is not a changed limit.
func (l *Limit) Same(o *Limit) bool {
	return l.rate == o.rate && l.period == o.period && l.burst == o.burst && l.alg == o.alg
}

// IsZero reports whether l is the zero Limit.
func (l Limit) IsZero() bool { return l.alg == 0 }

// String describes l as in configuration, such as "gcra 100/1m0s burst 20".
func (l Limit) String() string {
	if l.IsZero() {
		return "no limit"
	}
	s := fmt.Sprintf("%v %d/%v", l.alg, l.rate, l.Period())
	if l.alg.HasBurst() && l.burst != l.rate {
		s += fmt.Sprintf(" burst %d", l.burst)
	}
	if l.queue > 0 {
		s += fmt.Sprintf(" delay %v", l.Delay())
	}
	return s
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
