package rls

import (
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/sluice-rl/sluice/limiter"
)

// headerSet gathers the response_headers_to_add of one answer: the
// draft-10 RateLimit-Policy and RateLimit with one item per limited
// descriptor (not in shadow_mode), and Retry-After when it is OVER_LIMIT.
type headerSet struct {
	room  [4]rateItem // items' first, without an allocation
	items []rateItem
	retry time.Duration // the longest wait among the denials
	never bool          // a denial that no wait cures
}

// rateItem is one descriptor's item: q and w in RateLimit-Policy, r and t
// in RateLimit.
type rateItem struct {
	name string
	q    int64
	w    int64 // seconds
	r    int64
	t    int64 // seconds
}

// add adds the item of a descriptor decided under sl.limit.
func (h *headerSet) add(sl *slot, remaining int64, wait time.Duration) {
	q, w := sl.limit.Burst(), policyWindow(sl.limit, sl.period)
	if h.items == nil {
		h.items = h.room[:0]
	}
	h.items = append(h.items, rateItem{name: headerName(sl.label), q: q, w: max(ceilSeconds(w), 1),
		r: remaining, t: ceilSeconds(wait)})
}

// deny notes a denial's wait before the same request would pass.
func (h *headerSet) deny(retry time.Duration) {
	if retry == limiter.Never {
		h.never = true
		return
	}
	h.retry = max(h.retry, retry)
}

// headers returns the fields to add; Retry-After only when over. The two
// lists go into one buffer, on the stack while it fits, and become one
// string the two fields share; the fields are allocated together.
func (h *headerSet) headers(over bool) []*corev3.HeaderValue {
	retry := over && h.retry > 0
	if len(h.items) == 0 && !retry {
		return nil
	}
	fields := new([3]corev3.HeaderValue)
	out := make([]*corev3.HeaderValue, 0, 3)
	if len(h.items) > 0 {
		var room [256]byte
		b := room[:0]
		for i, it := range h.items {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendItem(b, it.name, 'q', it.q, 'w', it.w)
		}
		split := len(b)
		for i, it := range h.items {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendItem(b, it.name, 'r', it.r, 't', it.t)
		}
		both := string(b)
		fields[0].Key, fields[0].Value = "RateLimit-Policy", both[:split]
		fields[1].Key, fields[1].Value = "RateLimit", both[split:]
		out = append(out, &fields[0], &fields[1])
	}
	if retry {
		fields[2].Key, fields[2].Value = "Retry-After", strconv.FormatInt(max(ceilSeconds(h.retry), 1), 10)
		out = append(out, &fields[2])
	}
	return out
}

// policyWindow is w: the period for the window algorithms (and for a
// limit of 0), the empty bucket's refill time for the bucket algorithms.
func policyWindow(l limiter.Limit, period time.Duration) time.Duration {
	if !l.Algorithm().HasBurst() {
		return period
	}
	p, n := l.Interval()
	return time.Duration((l.Burst()*p+n-1)/n) * time.Microsecond
}

// headerName is a label as an sf-string's content: a rule file's key or
// value may hold '"' or '\', which become '_'; so does any byte outside
// printable ASCII.
func headerName(label string) string {
	for i := 0; i < len(label); i++ {
		if c := label[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			b := []byte(label)
			for j := i; j < len(b); j++ {
				if c := b[j]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
					b[j] = '_'
				}
			}
			return string(b)
		}
	}
	return label
}

func appendItem(b []byte, name string, k1 byte, v1 int64, k2 byte, v2 int64) []byte {
	b = append(append(append(b, '"'), name...), '"', ';', k1, '=')
	b = append(strconv.AppendInt(b, v1, 10), ';', k2, '=')
	return strconv.AppendInt(b, v2, 10)
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
