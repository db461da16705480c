// Package store defines where sluice keeps the state of each limited key:
// the Store interface (an atomic decide-and-update per key), AllOrNothing
// for the rules of one request decided as one step (and LookThenSpend for
// a store that cannot, inturn.go), the Leaser
// interface for concurrency limits (requests in flight held as leases that
// expire unless renewed, lease.go) and the Renewer that renews an
// instance's leases, the encoding of keys, and the errors stores share. The algorithms live in package limiter;
// a store supplies atomicity and persistence, never the math.
package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// Store decides requests against per-key limits, atomically per key.
type Store interface {
	// Decide applies a request of cost to key under limit at now and returns
	// the decision. The read, the algorithm and the write happen as one
	// step: concurrent callers on one key never both spend the same unit.
	// Over the limit is a decision, not an error; an error means the store
	// could not decide (unreachable, timed out, closed).
	Decide(ctx context.Context, key string, limit limiter.Limit, now time.Time, cost int64) (limiter.Decision, error)

	// DecideBatch decides several requests, each on its own key, in order,
	// and returns one result per request. Stores that talk over a network
	// do it in one round trip. It is not a transaction: each request is
	// decided independently.
	DecideBatch(ctx context.Context, reqs []Request, now time.Time) ([]Result, error)

	// Close releases the store's resources and stops its goroutines.
	Close() error
}

// AllOrNothing is implemented by stores that decide the requests of one
// HTTP request (one per matching rule) together, as one step that the
// store owns: the memory and gossip stores under their shards' locks, the
// Redis store in one script call. A store that is not one is decided so by
// LookThenSpend, in two or three batches and not atomically.
type AllOrNothing interface {
	// DecideAll decides reqs in turn (a key asked twice sees its first
	// request) and appends one result per request to dst: if every request
	// not marked Shadow is allowed, every allowed request spends;
	// otherwise none spends, the denied requests answer their denial and
	// the others a look (cost 0) at their key. A zero Limit and a negative
	// cost are denied, as limiter.Decide denies them. An error means the
	// store could not decide, as for DecideBatch.
	DecideAll(ctx context.Context, dst []Result, reqs []Request, now time.Time) ([]Result, error)
}

// Request is one decision asked of DecideBatch or DecideAll.
type Request struct {
	Key   string
	Limit limiter.Limit
	Cost  int64
	// Shadow marks a shadow rule's request for DecideAll: it is decided,
	// but its denial stops no other request. DecideBatch ignores it.
	Shadow bool
}

// Result is the answer to one Request: a decision, or why there is none.
type Result struct {
	Decision limiter.Decision
	Err      error
	// Shared reports that the decision was made on a counter the key
	// shares with other keys, not on its own: the memory or gossip
	// store's overflow counter of the key's rule and limit, where the keys
	// it has no room for count together. A denial then says that those keys spent the
	// limit, not that this one did.
	Shared bool
}

// ErrClosed is returned by a store used after Close.
var ErrClosed = errors.New("store: closed")

// UnavailableError is returned by a store whose failure policy is to refuse
// requests while its shared counters cannot be reached (on_failure: closed):
// the caller should answer 503 with RetryAfter.
type UnavailableError struct {
	RetryAfter time.Duration
	Err        error
}

func (e *UnavailableError) Error() string { return "store: unavailable: " + e.Err.Error() }

// Unwrap returns the failure behind e.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Key encodes a rule name and the parts that identify a caller (a client id,
// an IP prefix, a header value) as one store key. Each element is written
// as its length, a colon and its bytes, so no two different inputs give the
// same key: ("a_b", "c") and ("a", "b_c") stay apart.
func Key(rule string, parts ...string) string {
	var b strings.Builder
	b.Grow(keyLen(rule, parts))
	writeKey(&b, rule, parts)
	return b.String()
}

// GroupKey is Key for a key that belongs to a group: the caller it
// counts, such as Key("client", id). The group leads the key, marked by
// '@' (a Key starts with a digit), so that a store can place a group's
// keys together: the Redis store makes the group the key's Cluster hash
// tag, which puts all of one caller's keys on one node and lets their
// rules be decided in one script call. group and rule with parts are
// encoded as by Key, so no two different inputs give the same key, nor the
// same key as any Key.
func GroupKey(group, rule string, parts ...string) string {
	var b strings.Builder
	b.Grow(1 + len(group) + 4 + keyLen(rule, parts))
	b.WriteByte('@')
	writePart(&b, group)
	writeKey(&b, rule, parts)
	return b.String()
}

// SplitGroup returns the group of a key made by GroupKey and the rest of
// it, which is never empty; ok is false for any other key (one made by Key
// has no group).
func SplitGroup(key string) (group, rest string, ok bool) {
	if !strings.HasPrefix(key, "@") {
		return "", "", false
	}
	n, tail, found := strings.Cut(key[1:], ":")
	size, err := strconv.Atoi(n)
	if !found || err != nil || size < 0 || size >= len(tail) || n != strconv.Itoa(size) {
		return "", "", false
	}
	return tail[:size], tail[size:], true
}

// RuleOf returns the rule of a key made by Key or GroupKey: its first
// part, after its group if it has one; "" for another key.
func RuleOf(key string) string {
	if _, rest, ok := SplitGroup(key); ok {
		key = rest
	}
	n, tail, found := strings.Cut(key, ":")
	size, err := strconv.Atoi(n)
	if !found || err != nil || size < 0 || size > len(tail) || n != strconv.Itoa(size) {
		return ""
	}
	return tail[:size]
}

// keyLen returns the length of Key(rule, parts...), or a little more: it
// counts 4 bytes for each length and its colon, enough for parts shorter
// than 1000 bytes (a longer part only costs the builder one more growth).
func keyLen(rule string, parts []string) int {
	n := len(rule) + 4
	for _, p := range parts {
		n += len(p) + 4
	}
	return n
}

// writeKey writes Key(rule, parts...) to b.
func writeKey(b *strings.Builder, rule string, parts []string) {
	writePart(b, rule)
	for _, p := range parts {
		writePart(b, p)
	}
}

func writePart(b *strings.Builder, s string) {
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}
