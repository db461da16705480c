package httplimit

import (
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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

// setRateLimitHeaders writes RateLimit-Policy and RateLimit as structured
// field lists with one item per rule (draft-ietf-httpapi-ratelimit-headers-10),
// and when legacy is set X-RateLimit-* for rules[tight], or if tight is -1
// for the rule with the least remaining (the longer wait of two alike).
func setRateLimitHeaders(h http.Header, rules []ruleHeader, legacy bool, tight int) {
	if len(rules) == 0 {
		return
	}
	// Both lists go into one buffer, on the stack while it fits, and
	// become one string that the two headers share.
	var room [256]byte
	b := room[:0]
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
	split := len(b)
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
	both := string(b)
	h["Ratelimit-Policy"] = []string{both[:split]}
	h["Ratelimit"] = []string{both[split:]}
	if !legacy {
		return
	}
	if tight < 0 {
		tight = 0
		for i, r := range rules[1:] {
			if t := rules[tight]; r.remaining < t.remaining || r.remaining == t.remaining && r.more > t.more {
				tight = i + 1
			}
		}
	}
	r := rules[tight]
	h["X-Ratelimit-Limit"] = []string{strconv.FormatInt(r.limit, 10)}
	h["X-Ratelimit-Remaining"] = []string{strconv.FormatInt(r.remaining, 10)}
	h["X-Ratelimit-Reset"] = []string{strconv.FormatInt(r.more, 10)}
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

// problem is an RFC 9457 problem detail.
type problem struct {
	Type             string
	Title            string
	Status           int
	Detail           string
	ViolatedPolicies []string
	Reason           string // a throttle's refusal: what is full (shed, queue_full, ...)
}

// appendJSON writes p as JSON by hand, without encoding/json's reflection:
// a 429 is the answer sluice gives most often under attack.
func (p *problem) appendJSON(b []byte) []byte {
	b = append(b, '{')
	if p.Type != "" {
		b = appendJSONString(append(b, `"type":`...), p.Type)
		b = append(b, ',')
	}
	b = appendJSONString(append(b, `"title":`...), p.Title)
	b = strconv.AppendInt(append(b, `,"status":`...), int64(p.Status), 10)
	if p.Detail != "" {
		b = appendJSONString(append(b, `,"detail":`...), p.Detail)
	}
	if len(p.ViolatedPolicies) > 0 {
		b = append(b, `,"violated-policies":[`...)
		for i, v := range p.ViolatedPolicies {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, v)
		}
		b = append(b, ']')
	}
	if p.Reason != "" {
		b = appendJSONString(append(b, `,"reason":`...), p.Reason)
	}
	return append(b, '}', '\n')
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced, as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20 || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029:
			b = append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		default:
			b = utf8.AppendRune(b, r) // an invalid byte arrives here as U+FFFD
		}
	}
	return append(b, '"')
}

// quotaExceeded is the IANA problem type for a rate limit (RFC 9457 registry).
const quotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// WriteProblem writes an application/problem+json answer with Cache-Control:
// no-store. Headers already set on w (Retry-After, RateLimit) are kept.
func WriteProblem(w http.ResponseWriter, status int, detail string) {
	writeProblem(w, problem{Title: http.StatusText(status), Status: status, Detail: detail})
}

func writeProblem(w http.ResponseWriter, p problem) {
	body := p.appendJSON(make([]byte, 0, 256))
	h := w.Header()
	h["Content-Type"] = []string{"application/problem+json"}
	h["Cache-Control"] = []string{"no-store"}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(p.Status)
	_, _ = w.Write(body)
}

// FormatPeriod writes a period the way people say it: 1m, 30s, 1h, 1d;
// other periods as time.Duration does (1.5s, 100ms).
func FormatPeriod(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// requests writes n requests: "1 request", "100 requests".
func requests(n int64) string {
	if n == 1 {
		return "1 request"
	}
	return strconv.FormatInt(n, 10) + " requests"
}

// limitedDetail is the problem detail of a 429, such as "partner-a exceeded
// 100 requests per 1m (rule claims); retry in 23s".
func limitedDetail(who string, rule string, l limiter.Limit, retry time.Duration) string {
	var b strings.Builder
	b.WriteString(who)
	b.WriteString(" exceeded ")
	b.WriteString(requests(l.Rate()))
	b.WriteString(" per ")
	b.WriteString(FormatPeriod(l.Period()))
	b.WriteString(" (rule ")
	b.WriteString(rule)
	if retry == limiter.Never {
		b.WriteString("); this request costs more than the limit allows at once and will never pass")
		return b.String()
	}
	b.WriteString("); retry in ")
	b.WriteString(strconv.FormatInt(retryAfterSeconds(retry), 10))
	b.WriteString("s")
	return b.String()
}
