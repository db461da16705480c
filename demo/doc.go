// Package demo is the story behind `sluice demo`, played out in one process
// on real sockets on 127.0.0.1, the month-end story behind `sluice demo
// overload` (RunOverload) and the carbon story behind `sluice demo carbon`
// (RunCarbon; see below).
//
// An insurer offers partner firms an API to query the state of claims. The
// claims service answers `GET /claims/{id}` and decides by itself whether the
// calling partner may see that claim (403 if not): it trusts the
// X-Sluice-Client header that sluice sets, because a limiter counts, it does
// not authorise. sluice stands in front of it with one rule, `claims`: per
// partner, at most 100 requests in any 60 seconds (sliding_log, exact).
//
// Partner A's program has a bug: it sends several hundred requests a minute
// and ignores Retry-After. Partner B's program works normally, about one
// request a second, and once asks for a claim of partner A, which the claims
// service refuses. While the partners send, Run prints progress; at the end
// it prints one 429 answer as partner A saw it and a table per partner: sent,
// passed, rejected with 429, what reached the claims service (counted by the
// service itself) and the latency of sluice's answers. Partner A is capped at
// 100; partner B notices nothing.
//
// Everything Run starts it also stops: the partners, the gateway, the claims
// service and every connection, also when its context is cancelled early
// (Ctrl-C), in which case the table is still printed.
//
// # Month-end (RunOverload)
//
// The claims service is a service of fixed capacity (internal/fixedcap): 8
// requests at once, 20ms each, more waiting in its own backlog. sluice
// stands in front of it with a protect block: at most 24 in flight, an
// adaptive limit (never below the service's 8 workers) aiming the service's
// p99 at 150ms, a queue, and rules that
// make claim reads critical, month-end reports low and non-essential
// (degrade) and bulk exports low; new claims match no rule with a priority
// and are normal. The callers send at fixed rates whatever the answers. At
// month-end the service becomes four times as slow and reports and exports
// surge: the limit follows the service's latency down, reports are switched
// off and exports shed, new claims wait in the queue, and claim reads keep
// their 250ms objective. First, for comparison, the month-end's load goes
// straight at the slowed-down service for a few seconds, without sluice.
// RunOverload prints the limit over time with the claim reads' p99 of each
// interval and, per kind of request, what was sent, passed, degraded, shed
// and queued, the latency the callers saw, each phase's own p99 beside the
// baseline's, and whether the limit came back after the month-end; the
// claims service counts itself how many requests it had at once, never more
// than the ceiling.
//
// # Carbon (RunCarbon)
//
// Seed 002's low-value work while the grid's power is dirty: a claims
// service answers claim reads (normal priority) and bulk exports (low);
// sluice reads a stand-in for the grid operator's carbon intensity every
// second (protect.signals, above 400 gCO2/kWh) and, while it is above,
// sheds every export 503 while the claim reads go on. The grid reports 210,
// then 460, then 280; RunCarbon prints a line a second (what the grid
// reports, what sluice read, whether it degrades, what the callers got),
// the first shed answer and a table per phase. It is a story of its own
// rather than a phase of the overload demo: there the service is slow and
// sluice sheds by its own measure, here the service is fine and the reason
// to shed comes from outside.
package demo
