package decision

import (
	"net/netip"
	"time"

	"github.com/sluice-rl/sluice/internal/problem"
	"github.com/sluice-rl/sluice/policy"
)

// Blocks (policy.Override.Block): a caller whose client is blocked, or
// whose address is in a blocked range, is answered 403 problem+json as
// soon as that is known (the client right after it is identified, the
// range once the address is read through trusted proxies). Nothing is
// counted and no rule is asked. The detail names the client or the range
// and until when the block holds, never why: the policy does not hold
// the reason.

// ProblemBlocked is the problem type of a block's 403: sluice's own, its
// documentation the operations guide's section on overrides and blocks.
const ProblemBlocked = "https://github.com/sluice-rl/sluice/blob/main/docs/operations.md#overrides-and-blocks-what-they-beat"

const statusForbidden = 403

// blockHolds reports whether a block that ends at until (zero: never)
// still holds at now. The program that keeps the overrides removes it
// when it ends; until then it refuses nothing past its end.
func blockHolds(until, now time.Time) bool { return until.IsZero() || now.Before(until) }

// clientBlocked answers 403 for a caller whose client is blocked at now,
// and reports whether it did.
func (v *Verdict) clientBlocked(caller *policy.Caller, now time.Time) bool {
	until, ok := caller.Blocked()
	if !ok || !blockHolds(until, now) {
		return false
	}
	v.detail = appendClientBlocked(v.detail[:0], caller.ID, until)
	v.Report.Blocked = caller.ID
	v.forbid()
	return true
}

// addrBlocked answers 403 for a caller counted at addr, in a range
// blocked at now, and reports whether it did. The range's name is made
// for the Report: a blocked range's requests allocate it.
func (v *Verdict) addrBlocked(pol *policy.Compiled, addr netip.Addr, now time.Time) bool {
	if !pol.HasAddrOverrides() {
		return false
	}
	p, until, ok := pol.AddrBlocked(addr)
	if !ok || !blockHolds(until, now) {
		return false
	}
	v.detail = appendAddrBlocked(v.detail[:0], p, until)
	v.Report.Blocked = policy.Override{Addr: p}.Target()
	v.forbid()
	return true
}

// forbid makes the 403 of a block, its detail in v.detail.
func (v *Verdict) forbid() {
	v.Report.Status = statusForbidden
	v.answer(problem.Problem{Type: ProblemBlocked, Title: "Forbidden", Status: statusForbidden})
}

// appendClientBlocked appends the detail of a blocked client's 403:
// "partner-a is blocked until 2030-01-01T10:00:00Z".
func appendClientBlocked(b []byte, id string, until time.Time) []byte {
	return appendUntil(append(append(b, id...), " is blocked"...), until)
}

// appendAddrBlocked appends the detail of a blocked range's 403:
// "addresses in 203.0.113.0/24 are blocked until an operator removes the
// block".
func appendAddrBlocked(b []byte, p netip.Prefix, until time.Time) []byte {
	b = p.AppendTo(append(b, "addresses in "...))
	return appendUntil(append(b, " are blocked"...), until)
}

// appendUntil appends until when a block holds: the time in RFC 3339,
// UTC, rounded up to the second, or that it holds until it is removed.
func appendUntil(b []byte, until time.Time) []byte {
	if until.IsZero() {
		return append(b, " until an operator removes the block"...)
	}
	t := until.UTC()
	if s := t.Truncate(time.Second); !s.Equal(t) {
		t = s.Add(time.Second)
	}
	return t.AppendFormat(append(b, " until "...), time.RFC3339)
}
