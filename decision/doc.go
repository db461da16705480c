// Package decision is sluice's decision, without a transport: every front
// (the net/http middleware httplimit, the gateway's data path, the Envoy
// rate limit service, the /check endpoint) hands it a request as plain
// values and writes the answer it gets back. One place decides what a
// caller sees.
//
// A transport builds a Request (the method and escaped path as sent, the
// peer address parsed once, a Headers accessor over its own header
// storage, without copying) and calls Engine.Decide under the Settings in
// force (policy, legacy headers, throttle, pressure). The Engine, in order:
//
//   - lists the fields a caller must not pass on (Verdict.Removed:
//     X-Sluice-Client, the override headers, other spellings of the key
//     header and of counted headers);
//   - identifies the caller: its access key (once, not a list: else 400;
//     unknown with unknown: reject: 401), or anonymous, and its address:
//     the peer's, or the forwarded header's when the peer is a trusted
//     proxy;
//   - cleans the method and path (policy.CanonicalMethod, policy.CleanPath;
//     a path with two readings: 400) and matches the rules;
//   - builds one store request per counting rule (not the exempt ones)
//     and has the store decide them as one step, all or nothing
//     (store.Store.DecideAll; one DecideEach when a single rule enforces);
//   - judges: a 429 with Retry-After, RateLimit headers and a
//     problem+json body, a 503 when the store cannot decide and the
//     policy says so, or a pass with the RateLimit headers for the
//     response;
//   - holds a request a rule with a delay admitted for a later turn;
//   - takes the leases of concurrency rules (429 over the limit);
//   - refuses, while the Settings' Pressure is on (the degrade switch, an
//     outside signal), the requests of degrade rules and the low-priority
//     ones (503, as above protect's shed_from);
//   - admits through the throttle (503 with what is full), and reports
//     (Options.OnDecision).
//
// The Verdict carries the answer as values: Pass, Status, the header
// fields to set, the problem body, the client name for X-Sluice-Client,
// the cleaned method and path, the caller's address. Once the request is
// answered, the transport calls Verdict.Finish with what the service
// answered (status, a Headers accessor over the response's fields,
// latency, failure): that runs the after steps exactly once — gives back
// the leases and the throttle slot (with the outcome the adaptive limit
// learns from), settles reserved costs (count, cost_header) — then calls
// Options.OnResponse.
//
// Verdicts are pooled, and so is all their working memory: deciding a
// request allocates nothing of its own on the hot path (BenchmarkDecide,
// go test -bench Decide -benchmem ./decision). The bytes a Verdict hands
// out are valid until Finish; a transport copies what it keeps longer
// (httplimit copies the fields into the http.Header, which outlives it).
//
// Nothing here imports net/http: HTTP's statuses and header names are
// plain values, and the HTTP dates of an upstream's Retry-After are read
// with package time. The problem+json body is internal/problem's, which
// the gateway's transport writes too (AppendProblem).
package decision
