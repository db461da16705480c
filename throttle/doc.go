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
// last second, weighted as a sliding window; when that counts nothing or
// almost nothing, one completion per time the upstream has been busy
// without finishing any, at least a second; but a busy spell younger than
// a second is measured over itself, so that a burst after a quiet spell is
// not refused for the quiet; the fastest of these; a day at most). A
// waiter that has waited
// MaxWait without a slot is refused then (a ticker from the Throttle's
// clock, started when it joins the queue). A full queue takes a new
// request only by displacing a waiter: the newest waiter of the longest
// caller's FIFO in the lowest priority below the newcomer's, or, in its own
// priority, the newest of a caller with at least two more waiting than the
// newcomer's caller. The displaced waiter is refused at once
// (ReasonQueueFull).
//
// # The adaptive limit
//
// With Config.Adaptive the limit moves between MinInFlight and MaxInFlight
// once per window (Window, and at least MinSamples outcomes), from what
// Release reports. The control law (nextLimit): a p99 above LatencyTarget
// multiplies the limit by the gradient target/p99; upstream 503s, 504s,
// timeouts and failures multiply it by the share of the window that did not
// drop; either way it shrinks by at least one and at most by half. A window
// within the target grows the limit by a tenth (at least one), but only if
// at least half the limit was in use: an unused limit proves nothing. The
// limit starts at MaxInFlight and Throttle.Limit reads it. The p99 is
// exact up to 512 latencies a window and taken from a uniform sample of 512
// beyond (reservoir sampling). Below 100 latencies the nearest rank would
// be the window's maximum, so that one slow answer (the 1% an upstream
// meeting its objective may give) would shrink the limit; the second
// largest is taken there (TestAdaptiveOneOutlierPerWindow).
//
// It learns from two families of anchors and pins their known failures in
// tests:
//
//   - Envoy's adaptive concurrency filter computes a gradient
//     minRTT·(1+buffer)/sampleRTT, clamped, against a minRTT it re-measures
//     every interval by pinning the limit to min_concurrency. That
//     re-measurement refuses healthy traffic: 503 dips at a steady state
//     (envoy #8337, #18152). And with a high floor the minRTT is measured
//     while still overloaded, so under sustained degradation the limit
//     never recovers (envoy #38338). sluice's baseline is the configured
//     p99 objective, never a measured minimum, so nothing is ever probed:
//     TestAdaptiveHealthyNeverDips (300 healthy windows at the ceiling) and
//     TestAdaptiveHighFloorRecovers (50 degraded windows at the floor, then
//     back to the ceiling in 8).
//   - Netflix concurrency-limits (Gradient2, Vegas, AIMD). A dropped
//     request recorded as a near-zero latency keeps the limiter dropping
//     (#176), and canceled requests counted as timeouts let bad clients
//     shrink the limit (#146): here only answers that did the work are
//     latencies, drops are counted apart and canceled requests not at all
//     (TestAdaptiveDropsAreNotLatencies). Gradient2's "+queueSize" term
//     grows the limit without bound when the gradient sits near 0.8 (PR
//     #134): here there is no additive term while latency is above the
//     target, and growth needs the limit in use
//     (TestAdaptiveModerateOverloadNeverGrows). AIMD's multiplicative
//     back-off on drops is kept, proportional to the share of drops.
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
// and when an arrival's expected wait exceeds MaxWait, or a waiter has
// waited MaxWait, every waiter of a lower priority (which stands behind
// all that is ahead of it, so expects to wait even longer) is refused
// first. TestInvariantPriorityUnderLoad
// checks every decision under mixed concurrent load.
//
// # Settling: the upstream's outcome
//
// Release reports what the upstream did (Outcome: status, latency,
// timeout, failure, its Retry-After). It feeds the completion rate that
// predicts queue waits, the adaptive limit, and, with
// Config.UpstreamBackoff, the upstream's own back-pressure: a 503 with
// Retry-After holds every non-critical request for that long (at most
// MaxBackoff) and a 429 with Retry-After holds the caller it answered. A
// held request is refused at arrival, before any other work, with
// ReasonUpstreamBackoff and the time that remains, so the gateway answers
// it cheaply itself; the waiters a new hold covers leave the queue at once.
// The upstream's own answers are not touched: the caller passes them on.
//
// # Reloading
//
// Update changes the configuration of a running Throttle in place. A new
// Throttle per reload would start from nothing in flight while the old
// one's requests are still at the upstream, letting up to twice the
// ceiling through; Update keeps the slots, the queue and the holds.
//
// # Refusals and counters
//
// Every refusal carries a Reason and a RetryAfter that is never zero: the
// expected wait for a slot, or what remains of an upstream's hold;
// RetryAfterSeconds rounds it up for a Retry-After header. Stats is a
// snapshot of plain values for metrics (in flight, limit, queue length,
// admissions and refusals by priority and reason, total queue wait, the
// upstream's holds, whether shedding is on); Decision.Waited gives each
// request's queue wait for a histogram. ReasonCanceled is not an overload
// refusal: the caller went away.
package throttle
