package policy

import (
	"fmt"
	"net/http"
)

// Count is which of a rule's requests count against its limit, judged by
// the response: the request reserves the rule's cost when it is decided,
// and one that does not count is refunded after its response
// (limiter.Settle).
type Count uint8

// The counts, as configuration names them.
const (
	CountAll       Count = iota // every request (the default): nothing to settle
	CountFailures               // responses with a status of 400 or more
	CountSuccesses              // responses with a status below 400
)

// Counts lists every Count, in the order of the constants.
var Counts = []Count{CountAll, CountFailures, CountSuccesses}

var countNames = [...]string{"all", "failures", "successes"}

// String returns the configuration name of c: all, failures or successes.
func (c Count) String() string {
	if int(c) < len(countNames) {
		return countNames[c]
	}
	return "Count(?)"
}

// Counts reports whether a response of status counts under c.
func (c Count) Counts(status int) bool {
	switch c {
	case CountFailures:
		return status >= 400
	case CountSuccesses:
		return status < 400
	}
	return true
}

// Settles reports whether r's requests are settled after their response:
// a rate rule that counts only failures or only successes, or has a
// CostHeader.
func (r *Rule) Settles() bool {
	return !r.Classifies() && !r.LimitsInFlight() && (r.Count != CountAll || r.CostHeader != "")
}

// sluiceWrites reports whether name (in any case) is a header sluice sets
// on the responses it passes on (the RateLimit headers, and the legacy
// X-RateLimit-* ones), beside whatever the upstream sends.
func sluiceWrites(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Ratelimit", "Ratelimit-Policy", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset":
		return true
	}
	return false
}

// checkSettles reports a rule whose count or cost_header cannot be kept:
// an unknown Count, a CostHeader that is no header name, a hop-by-hop one
// or one sluice writes itself, or a rule without a rate.
func (c *Compiled) checkSettles(fail func(string, string, ...any)) {
	for i, r := range c.src.Rules {
		c.settles = c.settles || r.Settles()
		at := fmt.Sprintf("rules[%d]", i)
		if r.Count > CountSuccesses {
			fail(at+".count", "unknown value %d (all, failures or successes)", r.Count)
		}
		if h := r.CostHeader; h != "" && (!validHeaderName(h) || HopByHop(h)) {
			fail(at+".cost_header", "%q is not a header the upstream can send through a proxy (a name such as X-Usage-Tokens, not hop-by-hop)", h)
		} else if h != "" && sluiceWrites(h) {
			fail(at+".cost_header", "%s is a header sluice writes on every answer it passes on: its own count would be read as the cost (want the upstream's own header, such as X-Usage-Tokens)", h)
		}
		if (r.Count != CountAll || r.CostHeader != "") && r.Classifies() {
			fail(at+".count", "count and cost_header apply only to a rule with a rate (this rule only classifies)")
		}
	}
}

// Settles reports whether any rule settles its requests after the
// response (Rule.Settles).
func (c *Compiled) Settles() bool { return c.settles }
