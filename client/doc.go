// Package client is the calling side of rate limiting: Transport, an
// http.RoundTripper for Go programs that call rate-limited APIs, so that
// they do not earn 429s, do not retry in a storm, and do not hurt a
// dependency that is already failing.
//
//	c := &http.Client{Transport: &client.Transport{}}
//
// # Pacing on the RateLimit headers
//
// A server that sends the IETF RateLimit headers
// (draft-ietf-httpapi-ratelimit-headers-10, as sluice does) says after
// every answer how much quota is left and when more comes:
//
//	RateLimit-Policy: "claims";q=100;w=60
//	RateLimit: "claims";r=57;t=23
//
// The Transport keeps, per host and policy, a lower bound of the units
// left (r, less the requests still in flight and those sent since) that
// refills at q/w, and holds a request until every policy of its host has a
// unit; after an answer with r=0 it sends nothing to that host until t has
// passed. The legacy X-RateLimit-Limit/-Remaining/-Reset are read the
// same way when there is no RateLimit field (Reset as seconds, or as a
// Unix time when it is one). So a caller whose only limit is the server's
// receives no 429 after the first answer, which carries the headers. The
// refill at q/w is exact for a server whose policy is a bucket (sluice's
// token_bucket, gcra and leaky_bucket advertise w as the time the empty
// bucket takes to refill); for a window algorithm it is the average rate,
// and the next answer corrects the estimate.
//
// # Retries
//
// A 429 or 503 is retried only when that is safe: an idempotent method
// (GET, HEAD, OPTIONS, TRACE, PUT, DELETE) or an Idempotency-Key header, a
// body that can be sent again (GetBody, which http.NewRequest sets for the
// usual bodies), and a retry budget that allows it (RetryBudget: about a
// tenth more requests than the callers make, however many fail). The
// wait is the answer's Retry-After (seconds or an HTTP date), or the t of
// its RateLimit item with r=0, plus up to a tenth more at random, so that callers told the same moment do not all
// come back at once; and the Retry-After holds the host's other requests
// too. Without a usable Retry-After (none, negative, garbage, a date in
// the past) the wait is an exponential backoff from MinBackoff, half of it
// random. No wait is longer than MaxWait or the request's context
// deadline: when the server asks for longer, the 429 is returned at once,
// as it came, for the caller to decide. Errors from Base (a refused
// connection, a timeout) are returned, not retried.
//
// # Outbound limits
//
// Outbound is a limit of the caller's own toward a dependency: a rate in
// any of sluice's six algorithms, decided by a store (a memory store for
// one process, a Redis store so that a fleet of workers shares one budget
// toward a partner), and a cap on requests in flight that shrinks when the
// dependency answers 503 or 504, times out or fails, and grows back when
// it recovers (package throttle's adaptive limit).
//
// # Time
//
// Every wait is timed on the Transport's Clock and every jitter drawn from
// its Rand, so tests run on a fake clock without sleeping.
package client
