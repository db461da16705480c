package decision

import (
	"strconv"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/throttle"
)

// FormatPeriod writes a period the way people say it: 1m, 30s, 1h, 1d;
// other periods as time.Duration does (1.5s, 100ms).
func FormatPeriod(d time.Duration) string { return string(appendPeriod(nil, d)) }

// appendPeriod appends FormatPeriod(d).
func appendPeriod(b []byte, d time.Duration) []byte {
	for _, u := range [...]struct {
		d    time.Duration
		unit byte
	}{{24 * time.Hour, 'd'}, {time.Hour, 'h'}, {time.Minute, 'm'}, {time.Second, 's'}} {
		if d%u.d == 0 {
			return append(strconv.AppendInt(b, int64(d/u.d), 10), u.unit)
		}
	}
	return append(b, d.String()...)
}

// appendRequests appends n requests: "1 request", "100 requests".
func appendRequests(b []byte, n int64) []byte {
	if n == 1 {
		return append(b, "1 request"...)
	}
	return append(strconv.AppendInt(b, n, 10), " requests"...)
}

// appendRetry ends a 429's detail after its rule's parenthesis: when to
// retry, or that waiting will not help.
func appendRetry(b []byte, retry time.Duration) []byte { return appendWait(append(b, ')'), retry) }

// appendWait appends "; retry in 23s", or that waiting will not help.
func appendWait(b []byte, retry time.Duration) []byte {
	if retry == limiter.Never {
		return append(b, "; this request costs more than the limit allows at once and will never pass"...)
	}
	b = strconv.AppendInt(append(b, "; retry in "...), retryAfterSeconds(retry), 10)
	return append(b, 's')
}

// limitedDetail writes into v.detail the problem detail of a 429, such as
// "partner-a exceeded 100 requests per 1m (rule claims); retry in 23s".
func (v *Verdict) limitedDetail(who string, rule string, l limiter.Limit, retry time.Duration) {
	b := append(append(v.detail[:0], who...), " exceeded "...)
	b = appendPeriod(append(appendRequests(b, l.Rate()), " per "...), l.Period())
	b = append(append(b, " (rule "...), rule...)
	v.detail = appendRetry(b, retry)
}

// sharedDetail is limitedDetail for a denial on the store's shared
// overflow counter (store.Result.Shared): it says what happened, not that
// who spent the limit: "the store is full: 192.0.2.7 is counted together
// with every caller it has no room for, and together they used the 2
// requests per 1h of rule per-ip; retry in 3599s".
func (v *Verdict) sharedDetail(who string, rule string, l limiter.Limit, retry time.Duration) {
	b := append(append(v.detail[:0], "the store is full: "...), who...)
	b = append(b, " is counted together with every caller it has no room for, and together they used the "...)
	b = appendPeriod(append(appendRequests(b, l.Rate()), " per "...), l.Period())
	b = append(append(b, " of rule "...), rule...)
	v.detail = appendWait(b, retry)
}

// inFlightDetail writes into v.detail the problem detail of a concurrency
// rule's 429, as a rate rule's reads: "partner-a exceeded 10 requests in
// flight (rule partner-in-flight); retry in 1s".
func (v *Verdict) inFlightDetail(who string, rule *policy.Rule, d store.LeaseDecision) {
	b := append(append(v.detail[:0], who...), " exceeded "...)
	b = append(append(appendRequests(b, d.Limit), " in flight (rule "...), rule.Name...)
	v.detail = appendRetry(b, d.RetryAfter)
}

// refusalDetail writes into v.detail what is full, for a throttle's 503.
func (v *Verdict) refusalDetail(d throttle.Decision) {
	b := v.detail[:0]
	limit := func(b []byte, then string) []byte {
		return append(append(strconv.AppendInt(b, int64(d.Limit), 10), ')'), then...)
	}
	switch d.Reason {
	case throttle.ReasonDegraded:
		b = append(b, "the service is busy: this non-essential feature is switched off while it is"...)
	case throttle.ReasonShed:
		b = limit(append(b, "the service is near its in-flight limit ("...), ": low-priority requests are shed")
	case throttle.ReasonQueueFull:
		b = limit(append(b, "the service is at its in-flight limit ("...), " and its queue is full")
	case throttle.ReasonWaitTooLong:
		b = limit(append(b, "the service is at its in-flight limit ("...), " and the expected wait in its queue is too long")
	case throttle.ReasonUpstreamBackoff:
		b = append(b, "the upstream service asked for a pause (its Retry-After)"...)
	case throttle.ReasonCanceled:
		b = append(b, "the request was cancelled while it waited for a slot (the server is shutting down, or a deadline passed)"...)
	default:
		b = append(b, "the service is overloaded"...)
	}
	b = strconv.AppendInt(append(b, "; retry in "...), int64(d.RetryAfterSeconds()), 10)
	v.detail = append(b, 's')
}
