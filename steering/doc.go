// Package steering keeps the operators' run-time changes to the policy:
// overrides (a rate for one client or address range on one rule), blocks
// (a client or address range refused on every rule) and the degrade switch,
// each with a reason, an author and an optional expiry, and an audit trail
// of every change and expiry.
//
// The State lives in a Backend: a file (FileBackend) for one instance on
// the memory store, written atomically, or the Redis of the counters
// (RedisBackend), shared by every instance on it. A change is committed as
// the next version with a compare-and-set, so that of two changes made at
// once at two instances neither is lost, and a change that is refused
// (Options.Check) changes nothing anywhere. A Manager reads the State when
// a change is announced (Redis: a shard channel), every Options.Resync
// (500 ms: a lost announcement, or a Redis that restarted, is repaired
// within it) and when something expires, and hands what is in force to
// Options.Apply. Expiry is by the backend's clock (Redis TIME), so that
// instances whose clocks differ end an override together; the instance
// that first sees an expiry records it. While the backend cannot be read,
// the State last read stays in force, and Status says so. A Redis that
// lost the State (restarted without its data) gets back the one the
// instances apply.
//
// The package knows no HTTP and no policy: the gateway validates a change
// against its policy (Options.Check) and turns the State into
// policy.Override values.
package steering
