// Package rls is sluice as Envoy's rate limit service: a gRPC server of
// envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit that reads
// envoyproxy/ratelimit's rule files as written (config.LoadEnvoy, compiled
// by Compile) and decides their limits on sluice's stores, so that it can
// take that service's place behind Envoy's rate_limit filter unchanged.
//
// # Answers
//
// Each descriptor of a request is looked up in its domain's tree as
// envoyproxy/ratelimit looks it up (an entry matches its key and value,
// then a wildcard value, then its key alone; the limit is the one where
// the descriptor's last entry ends) and decided on its own, in the
// request's order. The answer has one status per descriptor, with
// current_limit, limit_remaining and duration_until_reset (whole
// seconds), and OVER_LIMIT overall when a descriptor not in shadow_mode
// is over its limit (quota_mode descriptors: when all of them are).
// response_headers_to_add carries the draft-10 RateLimit-Policy and
// RateLimit fields, one item per limited descriptor named by its
// configured path, and Retry-After when the answer is OVER_LIMIT. A
// descriptor that can never pass (requests_per_unit 0, or a hit above what
// its limit allows at once) adds no Retry-After, and its t, like its
// duration_until_reset, is when its window resets; w is always the limit's
// period.
//
// Where the answers differ from envoyproxy/ratelimit's: a denied hit
// spends nothing (that service counts it), so after a large hits_addend
// is refused a smaller one may still pass; a store error answers its
// descriptors as the store's on_failure says (open: OK; closed or local:
// OVER_LIMIT, see Options.OnStoreError), where that service fails the
// call; keys are never joined with '_', so that key
// "a_b" value "c" and key "a" value "b_c" stay two counters; and a
// rate_limit may name any of sluice's six algorithms.
//
// # Time
//
// The Redis store decides with Redis TIME, the one clock of every
// instance: windows are the epoch-aligned ones envoyproxy/ratelimit
// derives from each instance's own clock, without the skew.
//
// # Bad input
//
// An empty domain, no descriptors, more descriptors than
// Options.MaxDescriptors and an override whose unit cannot be counted are
// refused with InvalidArgument; a request larger than
// Options.MaxRequestBytes with ResourceExhausted. Empty keys or values
// and unknown domains are answered as envoyproxy/ratelimit answers them
// (OK, unless a rule matches). A value longer than 256 bytes is counted
// under its SHA-256, so a store key's size is bounded whatever a caller
// sends.
package rls
