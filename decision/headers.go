package decision

import (
	"strconv"
	"time"

	"github.com/sluice-rl/sluice/internal/problem"
	"github.com/sluice-rl/sluice/limiter"
)

// ruleHeader is what one matched rule contributes to the response headers.
type ruleHeader struct {
	name      string
	limit     int64
	window    time.Duration // see policyWindow
	remaining int64
	more      int64 // t: see quotaSeconds
	inFlight  bool  // a concurrency rule: q and r count requests in flight, with no w or t
}

// rateLimitHeaders adds RateLimit-Policy and RateLimit as structured field
// lists with one item per rule in v.headers
// (draft-ietf-httpapi-ratelimit-headers-10), and when legacy headers are
// on X-RateLimit-* for v.headers[tight], or if tight is -1 for the rule
// with the least remaining (the longer wait of two alike).
func (v *Verdict) rateLimitHeaders(tight int) {
	rules := v.headers
	if len(rules) == 0 {
		return
	}
	from := len(v.buf)
	b := v.buf
	for i, r := range rules {
		if i > 0 {
			b = append(b, ", "...)
		}
		if r.inFlight {
			b = append(appendParam(appendName(b, r.name), 'q', r.limit), `;qu="concurrent-requests"`...)
			continue
		}
		b = appendItem(b, r.name, 'q', r.limit, 'w', max(ceilSeconds(r.window), 1))
	}
	v.buf = b
	v.setField("Ratelimit-Policy", from)
	from = len(v.buf)
	b = v.buf
	for i, r := range rules {
		if i > 0 {
			b = append(b, ", "...)
		}
		if r.inFlight {
			b = appendParam(appendName(b, r.name), 'r', r.remaining)
			continue
		}
		b = appendItem(b, r.name, 'r', r.remaining, 't', r.more)
	}
	v.buf = b
	v.setField("Ratelimit", from)
	if v.legacy {
		v.legacyHeaders(tight)
	}
}

// legacyHeaders adds X-RateLimit-Limit/-Remaining/-Reset for
// v.headers[tight] (-1: the tightest).
func (v *Verdict) legacyHeaders(tight int) {
	rules := v.headers
	if tight < 0 {
		tight = 0
		for i, r := range rules[1:] {
			if t := rules[tight]; r.remaining < t.remaining || r.remaining == t.remaining && r.more > t.more {
				tight = i + 1
			}
		}
	}
	r := rules[tight]
	v.intField("X-Ratelimit-Limit", r.limit)
	v.intField("X-Ratelimit-Remaining", r.remaining)
	v.intField("X-Ratelimit-Reset", r.more)
}

// intField adds the field name with the value n.
func (v *Verdict) intField(name string, n int64) {
	from := len(v.buf)
	v.buf = strconv.AppendInt(v.buf, n, 10)
	v.setField(name, from)
}

// quotaSeconds is the t of a rule's RateLimit item: the seconds until more
// quota is available, rounded up. For a rule that rejects the request that
// is when the same request would pass, its Retry-After (never 0);
// otherwise when Remaining next grows, Decision.Refill (0 when the rule is
// at its full limit). A cost the rule can never allow has no Retry-After:
// t is then also Refill.
func quotaSeconds(d limiter.Decision) int64 {
	if !d.Allowed && d.RetryAfter != limiter.Never {
		return retryAfterSeconds(d.RetryAfter)
	}
	return ceilSeconds(d.Refill)
}

// policyWindow is the w of a rule's RateLimit-Policy before rounding: the
// period for the window algorithms, and for the bucket algorithms the time
// the empty bucket takes to refill, Burst x Period / Rate, so that q/w is
// the sustained rate (gcra 10/m burst 5 is q=5;w=30, not w=60). It is
// rounded up to whole seconds, as w must be, so that the advertised q/w is
// at most the true rate: a client that paces itself by it is never early.
func policyWindow(l limiter.Limit) time.Duration {
	if !l.Algorithm().HasBurst() {
		return l.Period()
	}
	p, n := l.Interval() // one request refills in p/n µs; Burst*p <= 2^53
	return time.Duration((l.Burst()*p+n-1)/n) * time.Microsecond
}

// appendItem appends `"name";k1=v1;k2=v2`.
func appendItem(b []byte, name string, k1 byte, v1 int64, k2 byte, v2 int64) []byte {
	return appendParam(appendParam(appendName(b, name), k1, v1), k2, v2)
}

// appendName appends `"name"`. Rule names are validated to letters,
// digits and -_. so they need no escaping inside the sf-string.
func appendName(b []byte, name string) []byte {
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"')
}

// appendParam appends `;k=v`.
func appendParam(b []byte, k byte, v int64) []byte {
	b = append(b, ';', k, '=')
	return strconv.AppendInt(b, v, 10)
}

// ceilSeconds rounds d up to whole seconds.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// retryAfterSeconds is the Retry-After value for a wait of d: whole seconds,
// rounded up, never 0, so that a caller who obeys it is never early.
func retryAfterSeconds(d time.Duration) int64 { return max(ceilSeconds(d), 1) }

// AppendProblem appends an RFC 9457 problem detail as JSON to dst: the
// body of an application/problem+json answer (send it with Cache-Control:
// no-store), such as a gateway's own 502 or 504. title is the status's
// reason phrase (Bad Gateway). It is the body every front writes
// (internal/problem, which the gateway's transport writes too).
func AppendProblem(dst []byte, status int, title, detail string) []byte {
	return problem.Append(dst, status, title, detail)
}

// quotaExceeded is the IANA problem type for a rate limit (RFC 9457 registry).
const quotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"
