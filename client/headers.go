package client

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// quotaInfo is what one answer says of one of the server's policies.
type quotaInfo struct {
	key       quotaKey
	remaining int64         // r: units left
	next      time.Duration // t: until more quota is available
	limit     int64         // q of the policy, 0 if not known
	window    time.Duration // w of the policy, 0 if not known
}

// quotaKey names a policy of a host: a RateLimit item's name, or the
// legacy X-RateLimit-* trio (legacy set, name empty).
type quotaKey struct {
	name   string
	legacy bool
}

// maxSeconds bounds every number of seconds read from a header (about 68
// years), so that no value overflows a time.Duration; any wait this long
// is over MaxWait anyway.
const maxSeconds = 1<<31 - 1

// seconds converts a number of seconds read from a header to a duration.
func seconds(n int64) time.Duration { return time.Duration(min(n, maxSeconds)) * time.Second }

// parseRetryAfter reads a Retry-After value at now: delay-seconds, or an
// HTTP-date (a date in the past is 0); either is at most maxSeconds. ok is
// false when v is empty or neither (a negative number, a fraction,
// garbage).
func parseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDigit(v[0]) {
		for i := 0; i < len(v); i++ {
			if !isDigit(v[i]) {
				return 0, false
			}
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil { // more digits than an int64 holds
			n = maxSeconds
		}
		return seconds(n), true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(at.Sub(now), 0), maxSeconds*time.Second), true
}

// parseQuotas reads the RateLimit and RateLimit-Policy fields of h, and
// the legacy X-RateLimit-Limit/-Remaining/-Reset when there is no
// RateLimit field, at now. A field that is not a valid list is ignored as
// a whole; an item without a valid r (missing, negative, not an integer)
// is ignored alone; unknown parameters are ignored.
func parseQuotas(h http.Header, now time.Time) []quotaInfo {
	var out []quotaInfo
	if items, ok := parseField(h, "Ratelimit"); ok && len(items) > 0 {
		policies, _ := parseField(h, "Ratelimit-Policy")
		for _, it := range items {
			if q, ok := quotaItem(it, policies); ok {
				out = append(out, q)
			}
		}
		return out
	}
	if q, ok := legacyQuota(h, now); ok {
		out = append(out, q)
	}
	return out
}

// parseField parses every line of the field name as one list, as RFC 9651
// combines them (joined by commas).
func parseField(h http.Header, name string) ([]sfItem, bool) {
	lines := h[name]
	switch len(lines) {
	case 0:
		return nil, false
	case 1:
		return parseList(lines[0])
	}
	return parseList(strings.Join(lines, ", "))
}

// quotaItem reads one RateLimit item, with q and w from the policy of the
// same name when there is one.
func quotaItem(it sfItem, policies []sfItem) (quotaInfo, bool) {
	r, okR := it.param("r")
	t, okT := it.param("t")
	if it.name == "" || !okR || r < 0 || okT && t < 0 {
		return quotaInfo{}, false
	}
	q := quotaInfo{key: quotaKey{name: it.name}, remaining: r, next: seconds(t)}
	for _, p := range policies {
		if p.name != it.name {
			continue
		}
		limit, okQ := p.param("q")
		w, okW := p.param("w")
		if okQ && okW && limit > 0 && w > 0 {
			q.limit, q.window = limit, seconds(w)
		}
	}
	return q, true
}

// legacyQuota reads X-RateLimit-Remaining (required), -Limit and -Reset.
// Reset is delta seconds, or, as some APIs send it, a Unix time when it is
// past the year 2001 (an epoch second count above 10^9).
func legacyQuota(h http.Header, now time.Time) (quotaInfo, bool) {
	r, ok := headerInt(h, "X-Ratelimit-Remaining")
	if !ok {
		return quotaInfo{}, false
	}
	q := quotaInfo{key: quotaKey{legacy: true}, remaining: r}
	if limit, ok := headerInt(h, "X-Ratelimit-Limit"); ok && limit > 0 {
		q.limit = limit
	}
	if reset, ok := headerInt(h, "X-Ratelimit-Reset"); ok {
		if reset > 1_000_000_000 {
			reset = max(reset-now.Unix(), 0)
		}
		q.next = seconds(reset)
	}
	return q, true
}

// headerInt reads a field holding one non-negative integer.
func headerInt(h http.Header, name string) (int64, bool) {
	v := strings.TrimSpace(h.Get(name))
	if v == "" || len(v) > 19 {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		if !isDigit(v[i]) {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}
