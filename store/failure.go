package store

import (
	"errors"
	"fmt"
	"time"
)

// FailurePolicy is what happens to a request while its store cannot decide
// it (configuration: store.on_failure). One policy governs every store:
// the memory store, Redis, and Redis's local fallback.
type FailurePolicy uint8

const (
	// FailOpen lets the request through, uncounted (the default).
	FailOpen FailurePolicy = iota
	// FailClosed refuses it: 503 with Retry-After.
	FailClosed
	// FailLocal decides it in a local memory store, each instance allowing
	// limit/instances, while a shared store is unreachable (see
	// store/failover). Where no local decision can be made either (a store
	// with no shared counters, or the local store failing too), it refuses
	// the request as FailClosed does: a local policy never lets through
	// what it cannot count.
	FailLocal
)

var failurePolicyNames = [...]string{FailOpen: "open", FailClosed: "closed", FailLocal: "local"}

// String returns the configuration name: open, closed or local.
func (p FailurePolicy) String() string {
	if int(p) < len(failurePolicyNames) {
		return failurePolicyNames[p]
	}
	return fmt.Sprintf("FailurePolicy(%d)", uint8(p))
}

// Refuses reports whether p answers 503 to a request no store could
// decide: true for FailClosed and FailLocal.
func (p FailurePolicy) Refuses() bool { return p != FailOpen }

// Refused reports whether a request whose store answered err (nil: the
// store decided it) is refused under p: a *UnavailableError (a store that
// applies the policy itself and asks for the refusal, store/failover under
// FailClosed) is refused whatever p says, and returned as asked, so that
// its RetryAfter can be answered; any other error is refused when p
// Refuses, and passes, uncounted, under FailOpen. Every front answers a
// store's failure with it (decision.Engine, rls, sluice.Limiter).
func (p FailurePolicy) Refused(err error) (refused bool, asked *UnavailableError) {
	if err == nil {
		return false, nil
	}
	if errors.As(err, &asked) {
		return true, asked
	}
	return p.Refuses(), nil
}

// Unavailable is what a store that applies p itself (store/failover)
// returns for a request it could not decide because of cause, where it
// makes no local decision: a *UnavailableError with retryAfter when p
// Refuses (FailClosed, and FailLocal where nothing local can decide), so
// that every front refuses it; cause itself under FailOpen, which the
// front answers by its own policy.
func (p FailurePolicy) Unavailable(cause error, retryAfter time.Duration) error {
	if p.Refuses() {
		return &UnavailableError{RetryAfter: retryAfter, Err: cause}
	}
	return cause
}
