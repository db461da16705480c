package decision

import (
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/throttle"
)

// Outcome is what one rule decided for one request.
type Outcome uint8

const (
	// Allowed: within the limit.
	Allowed Outcome = iota
	// Limited: over the limit of an enforcing rule; the request is rejected.
	Limited
	// ShadowLimited: over the limit of a shadow rule; counted, not rejected.
	ShadowLimited
	// Exempt: the rule's allow list covers the caller; nothing counted.
	Exempt
	// Failed: the store could not decide.
	Failed
	// NotSpent: the rule had room, but another rule rejected the request,
	// so nothing was counted against this one.
	NotSpent
	// Delayed: allowed after waiting its turn (a rule with a delay): the
	// request was held for the decision's Delay, then passed on.
	Delayed
)

var outcomeNames = [...]string{"allowed", "limited", "shadow_limited", "exempt", "store_error", "not_spent", "delayed"}

// String returns the metric label of o: allowed, limited, shadow_limited,
// exempt, store_error, not_spent or delayed.
func (o Outcome) String() string { return outcomeNames[o] }

// UnknownClient is Report.Client for a caller rejected for its key.
const UnknownClient = "unknown"

// StatusClientGone is Verdict.Status and Report.Status for a request whose
// caller went away while it waited (for a throttle slot, or its turn under
// a rule with a delay): nothing is answered (nginx's 499).
const StatusClientGone = 499

// Report is what happened to one request.
type Report struct {
	// Client is a label-safe name of the caller: its client id,
	// "anonymous", "unknown" (rejected for its key) or "-" (the policy
	// identifies nobody by key). Never the access key.
	Client string
	// Status is the status sluice answered with itself (400, 401, 403,
	// 429, 503), or 0 if the request was passed on; StatusClientGone when
	// its caller went away while it waited (nothing was answered).
	Status int
	// Blocked names, for a 403, the target whose block refused the
	// request: the client id, or "ip:" and the blocked range
	// (policy.Override.Target). Nothing was counted: Rules is empty.
	// Empty otherwise.
	Blocked string
	// Cert names the caller's client certificate (Request.Cert), never
	// its bytes: the selector that matched it ("dns:partner-a.example"),
	// or "sha256:" and its fingerprint when it names no client. "" without
	// a certificate, or when the policy lists no clients.
	Cert string
	// UnknownKey is true when the request sent an access key that is no
	// listed client's and was counted as anonymous (clients.unknown:
	// anonymous); its answer carries UnknownKeyHeader.
	UnknownKey bool
	// Counted names, for a 429, what the rule whose wait is RetryAfter
	// counted: the client id, the address, `header X-Tenant "acme"`... as
	// the problem detail does; never an access key. Empty otherwise.
	Counted string
	// RetryAfter is the Retry-After of a 429 or 503.
	RetryAfter time.Duration
	// Rules has one result per matching rule.
	Rules []RuleResult
	// Latency is the time spent deciding.
	Latency time.Duration
	// At is when the decision was made, on the Engine's Clock: the time
	// an Options.OnDecision that needs one reads, rather than the clock
	// again.
	At time.Time
	// Err is the store's error, if it failed.
	Err error
	// Throttled is true when Settings.Throttle decided the request (it
	// passed the rules); Priority is then its priority, Refusal why the
	// throttle refused it (throttle.ReasonNone: admitted) and QueueWait
	// how long it waited in the throttle's queue. A request refused under
	// Settings.Pressure has Throttled false, Status 503, its Priority and
	// Refusal throttle.ReasonDegraded (a degrade rule's) or
	// throttle.ReasonShed (a low-priority one).
	Throttled bool
	Priority  throttle.Priority
	Refusal   throttle.Reason
	QueueWait time.Duration
	// Held is how long the request was held for its turn by rules with a
	// delay (the longest of their Delays, less the time deciding took),
	// 0 when it was not; Latency leaves it out. Status is StatusClientGone
	// when its caller left meanwhile, 503 when the server cancelled the
	// wait.
	Held time.Duration

	// What CountedBy names a rule's counter from, set once the caller
	// is identified.
	pol    *policy.Compiled
	caller *policy.Caller
	v      *Verdict
}

// CountedBy names what Rules[j] counted for this request, as a 429's
// detail does: the client id, the address, `header X-Tenant "acme"`, or
// all callers together; never an access key. It is "" for a request whose
// caller was not identified. It reads the request, so it is valid only
// during Options.OnDecision, as the Report is; it allocates, so call it
// for the few results a caller keeps (a live view's new entry), not for
// every request.
func (r *Report) CountedBy(j int) string {
	if r.caller == nil || r.v == nil || j < 0 || j >= len(r.Rules) {
		return ""
	}
	return counted(r.pol, r.caller, r.Rules[j].Index, r.v.Addr, r.v)
}

// Source names where the limit of rule result j comes from, as
// policy.Compiled.LimitAt does: "" for the rule's own, "plan:NAME",
// "client:ID", or a run-time override's "override:ID" /
// "override:ip:RANGE". It allocates nothing.
func (r *Report) Source(j int) string {
	if r.caller == nil || r.v == nil || j < 0 || j >= len(r.Rules) {
		return ""
	}
	_, src := r.pol.LimitAt(r.caller, r.Rules[j].Index, r.v.Addr)
	return src
}

// RuleResult is one rule's decision.
type RuleResult struct {
	// Rule is the rule's name and Index its place in the policy
	// (policy.Compiled.Rule).
	Rule  string
	Index int
	// Key is the store key the rule counted this request on: one string
	// per counter, the same for every request counted together (and
	// never shown: it may hold a header's value). "" when nothing was
	// asked of the store (Exempt, or NotSpent before it was asked).
	Key      store.Key
	Outcome  Outcome
	Decision limiter.Decision
	// Shared reports that the store decided on a counter the caller's key
	// shares with others (store.Result.Shared: a full memory or gossip
	// store's overflow counter), not on the caller's own.
	Shared bool
}

// clientName is what names the caller to the protected service
// (policy.ClientHeader) and in the Report: its client id, "anonymous", or
// "" when the policy identifies nobody by key.
func clientName(pol *policy.Compiled, c *policy.Caller) string {
	switch {
	case c.ID != "":
		return c.ID
	case c == pol.Anonymous():
		return policy.AnonymousPlan
	}
	return ""
}

// outcome is what rule's decision d says of the request, spent as in judge.
func outcome(rule *policy.Rule, d limiter.Decision, spent bool) Outcome {
	switch {
	case d.Allowed && spent && d.Delay > 0:
		return Delayed
	case d.Allowed && spent:
		return Allowed
	case d.Allowed:
		return NotSpent
	case rule.Mode == policy.Shadow:
		return ShadowLimited
	}
	return Limited
}
