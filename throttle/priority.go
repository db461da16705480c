package throttle

import "fmt"

// Priority orders requests when the service is full: a higher priority is
// admitted first and shed last. The zero value is Normal.
type Priority int8

// The four priorities, lowest first. Low is the sheddable class: it is
// refused early near the limit and never queues. Normal, High and Critical
// are never shed early; at the limit they wait in the queue, highest first.
const (
	Low      Priority = -1
	Normal   Priority = 0
	High     Priority = 1
	Critical Priority = 2
)

// numPriorities is the number of priorities; index maps them onto 0..3.
const numPriorities = 4

// index returns p's position from 0 (Low) to 3 (Critical).
func (p Priority) index() int { return int(p) + 1 }

func (p Priority) valid() bool { return p >= Low && p <= Critical }

// String returns the configuration spelling: low, normal, high or critical.
func (p Priority) String() string {
	switch p {
	case Low:
		return "low"
	case Normal:
		return "normal"
	case High:
		return "high"
	case Critical:
		return "critical"
	}
	return fmt.Sprintf("Priority(%d)", int8(p))
}

// ParsePriority reads a configuration spelling (critical, high, normal or
// low, in lower case).
func ParsePriority(s string) (Priority, error) {
	for p := Low; p <= Critical; p++ {
		if p.String() == s {
			return p, nil
		}
	}
	return Normal, fmt.Errorf("throttle: unknown priority %q (accepted: critical, high, normal, low)", s)
}

// Reason says why a request was refused.
type Reason uint8

// The reasons for a refusal. Shed, QueueFull and WaitTooLong are overload
// refusals: the service is full. Degraded is a feature switched off while
// the service is busy, UpstreamBackoff obeys the upstream's own Retry-After,
// and Canceled means the caller went away while it waited.
const (
	ReasonNone            Reason = iota // admitted
	ReasonDegraded                      // a degrade request while in flight ≥ ShedFrom × limit
	ReasonShed                          // a Low request refused early
	ReasonQueueFull                     // the queue is full (or the request was displaced from it)
	ReasonWaitTooLong                   // the expected wait exceeds Queue.MaxWait
	ReasonUpstreamBackoff               // the upstream asked for a pause with Retry-After
	ReasonCanceled                      // the caller's context ended while it waited
	numReasons
)

// String returns the reason's metric label: degraded, shed, queue_full,
// wait_too_long, upstream_backoff or canceled ("" for ReasonNone).
func (r Reason) String() string {
	switch r {
	case ReasonNone:
		return ""
	case ReasonDegraded:
		return "degraded"
	case ReasonShed:
		return "shed"
	case ReasonQueueFull:
		return "queue_full"
	case ReasonWaitTooLong:
		return "wait_too_long"
	case ReasonUpstreamBackoff:
		return "upstream_backoff"
	case ReasonCanceled:
		return "canceled"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Overload reports whether r is a refusal because the service is full (Shed,
// QueueFull, WaitTooLong): the refusals the priority invariant is about.
func (r Reason) Overload() bool {
	return r == ReasonShed || r == ReasonQueueFull || r == ReasonWaitTooLong
}
