package rls

import (
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
)

// headerSet gathers the response_headers_to_add of one answer: the
// draft-10 RateLimit-Policy and RateLimit with one item per limited
// descriptor (not in shadow_mode), and Retry-After when it is OVER_LIMIT,
// formatted by package decision as the gateway formats them.
//
// It holds its first items in room, and only past them in more: a slice
// of its own room would make every headerSet escape to the heap, which
// was the largest allocation of a call (go tool pprof -sample_index
// alloc_space under bench/rls.sh's load).
type headerSet struct {
	room  [4]decision.RateLimitItem // the first n items, without an allocation
	n     int
	more  []decision.RateLimitItem // all the items, once room is full
	retry time.Duration            // the longest wait among the denials
}

// add adds the item of a descriptor decided under r's limit.
func (h *headerSet) add(r *rule, d limiter.Decision) {
	it := decision.RateLimitItem{Name: headerName(r.label), Limit: r.limit, Period: r.period, Decision: d}
	switch {
	case h.more != nil:
		h.more = append(h.more, it)
	case h.n < len(h.room):
		h.room[h.n] = it
		h.n++
	default:
		h.more = append(append(make([]decision.RateLimitItem, 0, 2*len(h.room)), h.room[:]...), it)
	}
}

// deny notes a denial's wait before the same request would pass.
func (h *headerSet) deny(retry time.Duration) {
	if retry != limiter.Never {
		h.retry = max(h.retry, retry)
	}
}

// headers returns the fields to add; Retry-After only when over. The two
// lists go into one buffer, on the stack while it fits, and become one
// string the two fields share; the fields are allocated together.
func (h *headerSet) headers(over bool) []*corev3.HeaderValue {
	retry := over && h.retry > 0
	items := h.more
	if items == nil {
		items = h.room[:h.n]
	}
	if len(items) == 0 && !retry {
		return nil
	}
	fields := new([3]corev3.HeaderValue)
	out := make([]*corev3.HeaderValue, 0, 3)
	if len(items) > 0 {
		var room [256]byte
		b, split := decision.AppendRateLimit(room[:0], items)
		both := string(b)
		fields[0].Key, fields[0].Value = "RateLimit-Policy", both[:split]
		fields[1].Key, fields[1].Value = "RateLimit", both[split:]
		out = append(out, &fields[0], &fields[1])
	}
	if retry {
		fields[2].Key, fields[2].Value = "Retry-After", strconv.FormatInt(decision.RetryAfterSeconds(h.retry), 10)
		out = append(out, &fields[2])
	}
	return out
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

// ceilSeconds rounds d up to whole seconds, as durations in the protocol's
// answers are.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
