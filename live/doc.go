// Package live keeps what the operators' view shows of the traffic as it
// happens: per rule, who is refused most and who is closest to its limit,
// the rule's allowed and limited requests second by second, and the
// findings that name seed 000's typical mistakes by their symptoms
// (retries_too_soon, limit_too_low, shared_address, separate_counters).
//
// A Live is fed one decision.Report per request (Observe, from the
// decision core's OnDecision hook) and read by Snapshot, which an admin
// endpoint serves. Its memory is bounded whatever the number of callers:
// per rule it remembers at most 2×Top counters, the union of two top-K
// sketches:
//
//   - refusals: Space-Saving (Metwally, Agrawal, El Abbadi 2005) over the
//     requests refused, with counts halved every minute so that who was
//     refused an hour ago gives way to who is refused now. A new counter
//     takes the place of the one with the fewest refusals and starts from
//     its count plus one, so that any counter refused more than 1/Top of
//     the rule's refusals stays listed.
//   - share of the limit used: the Top counters whose share of their
//     limit was highest at their last request, that share falling linearly
//     to 0 by the time their counter would be back at its full limit.
//
// A counter is known by a hash of the rule's store key (RuleResult.Key),
// never by the key itself: a rule that counts by the access key's header
// keeps no access key here. What Snapshot shows of a counter is the
// client id the decision named and what the rule counted it as
// (Report.CountedBy, asked once, when the counter is first listed), which
// never names an access key either.
//
// Observe allocates nothing for a counter already listed, takes one mutex
// per rule the request matched, and holds it for a few hundred
// nanoseconds. Time is an argument: Observe and Snapshot take now, and a
// test drives them with a fake clock.
//
// The findings are computed by Snapshot over a sliding period (Options.
// Period, default 10 minutes), from counts each listed counter keeps in
// ten buckets of a tenth of the period:
//
//   - retries_too_soon: a caller sent at least MinEarly requests before the
//     Retry-After it was given with its last 429 on that counter, and they
//     are at least half of its refusals.
//   - limit_too_low: a caller was refused in at least MinWindows distinct
//     windows of the rule (windows at least the rule's period apart), each
//     time having waited as told, and at most MaxEarlyLow of its requests
//     in the period (nor in the one before) came before its Retry-After:
//     a caller that ignores
//     Retry-After is never reported so, and one refused in a single window
//     is no finding.
//   - shared_address: two or more client ids were refused on one counter
//     of a rule that counts by address.
//   - separate_counters: the store was degraded (on_failure open or local:
//     each instance counted apart) for some of the period, or instances on
//     one Redis apply different versions of a rule. Package live does not
//     know the store: the gateway tells it (Sample, Inputs).
package live
