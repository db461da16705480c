package decision

import (
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// RateLimitItem is one limit's item of the RateLimit fields, for a
// transport that decides limits of its own (package rls decides Envoy's
// rule files) and writes the fields as the Engine writes them.
type RateLimitItem struct {
	// Name names the item; it must hold no '"' or '\' (it is written as
	// an sf-string without escapes).
	Name  string
	Limit limiter.Limit
	// Period is the w of an item whose Limit is the zero Limit: a limit
	// of no requests in Period, which no limiter.Limit holds (Envoy's
	// requests_per_unit 0). It is not read otherwise.
	Period   time.Duration
	Decision limiter.Decision
}

// AppendRateLimit appends to dst the value of RateLimit-Policy for items,
// then the value of RateLimit, as the Engine writes them for its rules
// (draft-ietf-httpapi-ratelimit-headers-10: q and w, then r and t), and
// returns the extended slice and where the RateLimit value starts.
func AppendRateLimit(dst []byte, items []RateLimitItem) ([]byte, int) {
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = appendItem(dst, it.Name, 'q', it.Decision.Limit, 'w', max(ceilSeconds(it.window()), 1))
	}
	split := len(dst)
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = appendItem(dst, it.Name, 'r', it.Decision.Remaining, 't', quotaSeconds(it.Decision))
	}
	return dst, split
}

// window is the item's w before rounding: its limit's policyWindow, or
// Period for a limit of no requests.
func (it *RateLimitItem) window() time.Duration {
	if it.Limit.IsZero() {
		return it.Period
	}
	return policyWindow(it.Limit)
}

// RetryAfterSeconds is the Retry-After the Engine writes for a wait of d:
// whole seconds, rounded up, never 0.
func RetryAfterSeconds(d time.Duration) int64 { return retryAfterSeconds(d) }
