// Package throttle protects a service from the sum of its callers: at most
// a limit of requests hold a slot at the service at once, and over the
// limit requests wait in a priority queue or are refused with a reason and
// a time to retry after. It knows nothing of HTTP: the gateway, the net/http
// middleware (and a fasthttp path or an Envoy rate-limit server) map their
// requests onto a Request and their refusals onto 503 + Retry-After. It
// imports only the standard library and sluice's clock.
//
// # Admission
//
// Acquire decides a Request. Below the limit it takes a slot at once. At
// the limit a request joins the queue if it is expected to get a slot
// within Queue.MaxWait, and waits — blocked in the caller's own goroutine,
// no goroutine is started for it — until Release of an earlier request hands
// it the slot, or its context ends (then it leaves the queue). Release
// gives a slot back and reports the upstream's outcome. Config.MaxInFlight
// is a hard ceiling: the count of slots is changed only under one mutex,
// and a slot is handed from a releasing request straight to a waiter, so no
// interleaving lets more than MaxInFlight requests hold one.
//
// # The queue
//
// Waiters are served highest priority first. Within a priority every
// caller (Request.Client) has its own FIFO and the callers are served
// round-robin, one request each per round: the fair queuing of Kubernetes
// API Priority and Fairness for requests of equal width. APF shuffle-shards
// its flows onto a fixed set of queues because it cannot afford one per
// flow; here a caller's FIFO exists only while one of its requests waits,
// so there are at most Queue.MaxLength of them and each caller gets its own
// (no two callers share a queue, so no collision lets a flooding caller
// slow another). A request is refused at once (ReasonWaitTooLong) when its
// expected wait exceeds MaxWait: the waiters that round-robin puts ahead of
// it, plus one, divided by the recent completion rate (completions over the
// last second, weighted as a sliding window). A full queue takes a new
// request only by displacing a waiter: the newest waiter of the longest
// caller's FIFO in the lowest priority below the newcomer's, or, in its own
// priority, the newest of a caller with at least two more waiting than the
// newcomer's caller. The displaced waiter is refused at once
// (ReasonQueueFull).
//
// # Priorities and early shedding
//
// Priorities are Critical > High > Normal > Low. Low is the sheddable class:
// from ShedFrom × limit requests in flight on, a Low arrival is refused
// (ReasonShed) with a probability that grows linearly from
// 1/(limit-line+1) at the line to 1 at the limit, so shedding starts before
// the service is full and callers feel back-pressure early; at the limit
// every Low request is refused and none ever queues. A Degrade request (a
// non-essential feature) is refused (ReasonDegraded) while in flight is at
// or above the line, whatever its priority: that is controlled degradation,
// a switch, not an overload refusal. Normal, High and Critical are never
// shed early; at the limit they queue. The probability draws come from
// Config.Rand, so tests are deterministic.
//
// The invariant: no request is refused for overload (Shed, QueueFull,
// WaitTooLong) while one of lower priority waits in the queue, and none is
// admitted while one of higher priority waits. Dispatch takes the highest
// priority first; a full queue displaces a lower priority before refusing;
// and when an arrival's expected wait exceeds MaxWait, every waiter of a
// lower priority (which stands behind all that is ahead of the arrival, so
// expects even longer) is refused first. TestInvariantPriorityUnderLoad
// checks every decision under mixed concurrent load.
//
// Every refusal carries a RetryAfter that is never zero: the expected wait
// for a slot, or what remains of an upstream's hold. RetryAfterSeconds
// rounds it up for a Retry-After header.
package throttle
