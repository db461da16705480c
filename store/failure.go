package store

import "fmt"

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
