package limiter_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

func TestNewRejects(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		name   string
		alg    limiter.Algorithm
		rate   int64
		period time.Duration
		burst  int64
		want   string // what the error must say is accepted
	}{
		{"no algorithm", 0, 1, time.Second, 0, "fixed_window"},
		{"unknown algorithm", limiter.LeakyBucket + 1, 1, time.Second, 0, "leaky_bucket"},
		{"zero rate", limiter.GCRA, 0, time.Second, 0, "1 to 1000000000 per period"},
		{"negative rate", limiter.FixedWindow, -1, time.Second, 0, "1 to 1000000000 per period"},
		{"rate too large", limiter.TokenBucket, limiter.MaxRate + 1, time.Second, 0, "1 to 1000000000 per period"},
		{"zero period", limiter.GCRA, 1, 0, 0, "1ms to 8784h0m0s"},
		{"period too short", limiter.GCRA, 1, time.Millisecond - time.Microsecond, 0, "1ms to 8784h0m0s"},
		{"period too long", limiter.SlidingWindow, 1, 366*day + time.Microsecond, 0, "1ms to 8784h0m0s"},
		{"period not in microseconds", limiter.GCRA, 1, time.Millisecond + time.Nanosecond, 0, "whole number of microseconds"},
		{"sliding_log rate too large", limiter.SlidingLog, limiter.MaxLogRate + 1, time.Second, 0, "at most 10000 per period"},
		{"burst on a window", limiter.FixedWindow, 10, time.Second, 5, "only token_bucket, gcra and leaky_bucket"},
		{"burst on a sliding window", limiter.SlidingWindow, 10, time.Second, 11, "only token_bucket, gcra and leaky_bucket"},
		{"burst on a log", limiter.SlidingLog, 10, time.Second, 1, "only token_bucket, gcra and leaky_bucket"},
		{"negative burst", limiter.GCRA, 10, time.Second, -1, "1 to 1000000000"},
		{"burst too large", limiter.TokenBucket, 10, time.Second, limiter.MaxBurst + 1, "1 to 1000000000"},
		// burst x period/rate in units of 1/rate µs must stay below 2^53:
		// 1e9 x 9007200µs > 2^53 = 9007199254740992.
		{"burst not exact", limiter.LeakyBucket, 1, 9007200 * time.Microsecond, limiter.MaxBurst, "lower the burst"},
		{"burst not exact, year", limiter.GCRA, 1, 366 * day, limiter.MaxBurst, "round the rate or period"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := limiter.New(tt.alg, tt.rate, tt.period, tt.burst)
			if err == nil {
				t.Fatalf("New(%v, %d, %v, %d) = %v, want an error", tt.alg, tt.rate, tt.period, tt.burst, l)
			}
			if !l.IsZero() {
				t.Errorf("New returned %v with its error, want the zero Limit", l)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "limiter: ") || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q: want the prefix \"limiter: \" and to be told %q", msg, tt.want)
			}
		})
	}
}

func TestNewAccepts(t *testing.T) {
	tests := []struct {
		alg    limiter.Algorithm
		rate   int64
		period time.Duration
		burst  int64
		// want
		limit        int64 // Burst()
		p, n         int64 // Interval()
		str          string
		periodString string
	}{
		{limiter.FixedWindow, 3, time.Second, 0, 3, 1_000_000, 3, "fixed_window 3/1s", "1s"},
		{limiter.FixedWindow, 3, time.Second, 3, 3, 1_000_000, 3, "fixed_window 3/1s", "1s"}, // burst == rate is no burst
		{limiter.SlidingWindow, 100, time.Minute, 0, 100, 600_000, 1, "sliding_window 100/1m0s", "1m0s"},
		{limiter.SlidingLog, limiter.MaxLogRate, time.Millisecond, 0, 10_000, 1, 10, "sliding_log 10000/1ms", "1ms"},
		{limiter.TokenBucket, 10, time.Second, 3, 3, 100_000, 1, "token_bucket 10/1s burst 3", "1s"},
		{limiter.GCRA, 100, time.Minute, 20, 20, 600_000, 1, "gcra 100/1m0s burst 20", "1m0s"},
		{limiter.GCRA, 7, time.Second, 7, 7, 1_000_000, 7, "gcra 7/1s", "1s"},
		{limiter.LeakyBucket, 3, 10 * time.Millisecond, 0, 3, 10_000, 3, "leaky_bucket 3/10ms", "10ms"},
		{limiter.TokenBucket, limiter.MaxRate, time.Millisecond, limiter.MaxBurst, limiter.MaxBurst, 1, 1_000_000, "token_bucket 1000000000/1ms", "1ms"},
		{limiter.GCRA, 1, limiter.MaxPeriod, 0, 1, 31_622_400_000_000, 1, "gcra 1/8784h0m0s", "8784h0m0s"},
		{limiter.SlidingWindow, limiter.MaxRate, limiter.MaxPeriod, 0, limiter.MaxRate, 158_112, 5, // 31622.4µs
			"sliding_window 1000000000/8784h0m0s", "8784h0m0s"},
		{limiter.GCRA, 3, 1500 * time.Microsecond, 0, 3, 500, 1, "gcra 3/1.5ms", "1.5ms"},
		// The largest exact burst for 1 per 9007199µs: 1e9 x 9007199 + 1 <= 2^53.
		{limiter.LeakyBucket, 1, 9007199 * time.Microsecond, limiter.MaxBurst, limiter.MaxBurst, 9007199, 1, "leaky_bucket 1/9.007199s burst 1000000000", "9.007199s"},
	}
	for _, tt := range tests {
		l, err := limiter.New(tt.alg, tt.rate, tt.period, tt.burst)
		if err != nil {
			t.Errorf("New(%v, %d, %v, %d): %v", tt.alg, tt.rate, tt.period, tt.burst, err)
			continue
		}
		p, n := l.Interval()
		if l.Algorithm() != tt.alg || l.Rate() != tt.rate || l.Period() != tt.period || l.Burst() != tt.limit ||
			p != tt.p || n != tt.n || l.IsZero() {
			t.Errorf("New(%v, %d, %v, %d) = {alg %v rate %d period %v burst %d interval %d/%d zero %v}, want burst %d interval %d/%d",
				tt.alg, tt.rate, tt.period, tt.burst, l.Algorithm(), l.Rate(), l.Period(), l.Burst(), p, n, l.IsZero(), tt.limit, tt.p, tt.n)
		}
		if got := l.String(); got != tt.str {
			t.Errorf("String() = %q, want %q", got, tt.str)
		}
		if got := l.Period().String(); got != tt.periodString {
			t.Errorf("Period() = %q, want %q", got, tt.periodString)
		}
		if got := limiter.MustNew(tt.alg, tt.rate, tt.period, tt.burst); got != l {
			t.Errorf("MustNew = %v, New = %v", got, l)
		}
	}
}

func TestMustNewPanicsOnInvalid(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustNew(fixed_window, 0, 1s, 0) did not panic")
		}
	}()
	limiter.MustNew(limiter.FixedWindow, 0, time.Second, 0)
}

func TestZeroLimit(t *testing.T) {
	var l limiter.Limit
	if !l.IsZero() || l.String() != "no limit" || l.Burst() != 0 || l.Algorithm() != 0 {
		t.Errorf("zero Limit: IsZero %v, String %q, Burst %d, Algorithm %v", l.IsZero(), l.String(), l.Burst(), l.Algorithm())
	}
}

func TestAlgorithmNames(t *testing.T) {
	want := []string{"fixed_window", "sliding_window", "sliding_log", "token_bucket", "gcra", "leaky_bucket"}
	if len(limiter.Algorithms) != len(want) {
		t.Fatalf("Algorithms has %d entries, want %d", len(limiter.Algorithms), len(want))
	}
	for i, a := range limiter.Algorithms {
		if a.String() != want[i] {
			t.Errorf("Algorithms[%d].String() = %q, want %q", i, a, want[i])
		}
		got, err := limiter.ParseAlgorithm(want[i])
		if err != nil || got != a {
			t.Errorf("ParseAlgorithm(%q) = %v, %v; want %v", want[i], got, err, a)
		}
		if hasBurst := i >= 3; a.HasBurst() != hasBurst {
			t.Errorf("%v.HasBurst() = %v, want %v", a, a.HasBurst(), hasBurst)
		}
	}
	for a, s := range map[limiter.Algorithm]string{0: "Algorithm(0)", 7: "Algorithm(7)", 255: "Algorithm(255)"} {
		if a.String() != s {
			t.Errorf("Algorithm(%d).String() = %q, want %q", uint8(a), a.String(), s)
		}
		if a.HasBurst() {
			t.Errorf("Algorithm(%d).HasBurst() = true", uint8(a))
		}
	}
}

func TestParseAlgorithmRejects(t *testing.T) {
	for _, s := range []string{"", "GCRA", "token-bucket", "tokenbucket", " gcra", "gcra ", "Algorithm(1)", "leaky"} {
		a, err := limiter.ParseAlgorithm(s)
		if err == nil {
			t.Errorf("ParseAlgorithm(%q) = %v, want an error", s, a)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "limiter: ") || !strings.Contains(msg, "fixed_window, sliding_window, sliding_log, token_bucket, gcra or leaky_bucket") {
			t.Errorf("ParseAlgorithm(%q) error %q does not list the accepted names", s, msg)
		}
		if a != 0 {
			t.Errorf("ParseAlgorithm(%q) returned %v with its error", s, a)
		}
	}
}

// TestNewErrorField: New's errors are *limiter.LimitError naming the argument at
// fault, so that callers blame a field without reading the message.
func TestNewErrorField(t *testing.T) {
	for _, tc := range []struct {
		alg          limiter.Algorithm
		rate         int64
		period       time.Duration
		burst        int64
		want         limiter.Field
		wantInString string
	}{
		{0, 10, time.Second, 0, limiter.FieldAlgorithm, "unknown algorithm"},
		{limiter.GCRA, 0, time.Second, 0, limiter.FieldRate, "rate 0 out of range"},
		{limiter.SlidingLog, limiter.MaxLogRate + 1, time.Second, 0, limiter.FieldRate, "sliding_log rate"},
		{limiter.GCRA, 10, 0, 0, limiter.FieldPeriod, "period 0s out of range"},
		{limiter.GCRA, 10, time.Millisecond + 1, 0, limiter.FieldPeriod, "whole number of microseconds"},
		{limiter.SlidingWindow, 10, time.Second, 5, limiter.FieldBurst, "takes no burst"},
		{limiter.GCRA, 10, time.Second, limiter.MaxBurst + 1, limiter.FieldBurst, "burst 1000000001 out of range"},
		{limiter.GCRA, 7, limiter.MaxPeriod, limiter.MaxBurst, limiter.FieldBurst, "cannot be computed exactly"},
	} {
		_, err := limiter.New(tc.alg, tc.rate, tc.period, tc.burst)
		var le *limiter.LimitError
		if !errors.As(err, &le) || le.Field != tc.want || !strings.Contains(err.Error(), tc.wantInString) || !strings.HasPrefix(err.Error(), "limiter: ") {
			t.Errorf("New(%v, %d, %v, %d) = %v (%#v), want a *limiter.LimitError for %v saying %q", tc.alg, tc.rate, tc.period, tc.burst, err, le, tc.want, tc.wantInString)
		}
	}
}

// TestSame: Same is ==, for limits that differ in each parameter.
func TestSame(t *testing.T) {
	limits := []limiter.Limit{{},
		limiter.MustNew(limiter.GCRA, 10, time.Second, 0), limiter.MustNew(limiter.GCRA, 10, time.Second, 5),
		limiter.MustNew(limiter.GCRA, 10, time.Minute, 0), limiter.MustNew(limiter.GCRA, 11, time.Second, 0),
		limiter.MustNew(limiter.TokenBucket, 10, time.Second, 0), limiter.MustNew(limiter.FixedWindow, 10, time.Second, 0),
	}
	for i, a := range limits {
		for j, b := range limits {
			if a.Same(&b) != (a == b) || (a == b) != (i == j) {
				t.Errorf("%v.Same(%v) = %v, == is %v", a, b, a.Same(&b), a == b)
			}
		}
	}
}
