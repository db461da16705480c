// Package gossip is a store shared by several instances without a central
// server: each instance decides on its own, from its own counts and the
// counts the others last told it, and tells the others what it counted
// every Interval, over hashicorp/memberlist (which also finds the
// instances, notices those that leave or die, and encrypts the gossip with
// Options.Key).
//
// # What it keeps, and the bound
//
// Only the window algorithms, fixed_window and sliding_window, whose state
// is a count per epoch-aligned window that adds up across instances
// (Supported); a decision under another algorithm is an error, and
// sluice's configuration check refuses such a rule. For each key an
// instance holds its own state, and each other instance's as that one last
// told it. A decision runs limiter.Decide on the sum: the fleet's counts
// of the current window (and of the previous one, for sliding_window).
//
// Every message carries absolute counts (an instance's count of a window
// only grows), so a message lost, repeated or late changes nothing once a
// later one arrives, and the receiver acknowledges each. An instance
// admits at most Options.MaxUnsynced for a key beyond what every other
// instance has acknowledged hearing (one request more when a single
// request costs more: a request is admitted whenever nothing is
// unacknowledged); a request that the fleet's counts allow but that would
// take it further is denied with RetryAfter Interval, the time to the next
// exchange. Hence, for n instances that all know each other, whatever the
// order of the requests, at most
//
//	limit + (n − 1) × max_unsynced
//
// are admitted per window of fixed_window (for sliding_window: in each
// epoch-aligned window, and in its weighted estimate): when the last request
// of a window is admitted, its instance saw every other instance's count
// short of at most max_unsynced, and the sum it saw stayed within the
// limit. The price: a burst on one instance beyond max_unsynced of what
// it told waits for the next exchange and its acknowledgements, up to one
// Interval and a round trip, even when the fleet has room.
//
// An instance that joins (or restarts, as another incarnation) has heard
// nothing yet: until every peer has sent it all of its counts it admits at
// most max_unsynced per key, and the peers' own unacknowledged room is
// reset until it acknowledges their full counts, one exchange later. A
// member that leaves or dies keeps its counts counted by the others until
// their windows end, so killing one resets nothing; one that is closed
// first tells them what they had not acknowledged (Close), so that leaving
// on purpose loses nothing. The clocks of the
// instances must agree to well within a period, as they choose the window
// of each request by their own clocks.
//
// # Several rules
//
// The rules of one request are decided all or nothing (DecideAll,
// store.Store.DecideAll), in one step under the locks of their keys' shards
// (taken in ascending order, so that two calls never wait for each other
// in a circle): every rule is decided in turn, as Decide decides it, on
// the fleet's counts and within max_unsynced, and this instance's counts
// are kept only if every enforcing rule allowed. A rule that would take the
// instance beyond max_unsynced waits for the next exchange, as a single
// decision does, and the others spend nothing; the bound above holds for
// each rule. A new key without room, or too long for a message, is decided
// on its rule's overflow counter within the same step (see Bounds).
//
// # Partitions
//
// While some members cannot reach the others, memberlist declares them
// dead after its suspicion timeout (seconds); until then an instance that
// misses an acknowledgement admits no more than max_unsynced beyond what
// was acknowledged. Afterwards each side decides as a fleet of its own,
// still counting what the other side had told it before the partition: a
// side of k instances admits at most limit + (k − 1) × max_unsynced per
// window, that counted too; p sides together at most p × limit + (n − p)
// × max_unsynced. A member stopped (SIGSTOP) rather than cut off admits
// nothing while stopped; once it resumes it admits, as any member, at most
// max_unsynced per key beyond what the others acknowledged, until it hears
// their counts. When the partition heals the members find each other
// again: each sends what changed since the round the other last
// acknowledged (an instance remembers, per incarnation of another, up to
// which round it holds all of its counts, and acknowledges only a message
// that leaves no gap), and each side's unacknowledged room is reset until
// the other acknowledges, one exchange later.
//
// # Bounds
//
// The store holds at most Options.MaxKeys keys, its own and those the
// others tell it of, dropping a key once its windows have ended (a sweep
// every SweepInterval, and a full shard on demand). A new key of this
// instance's that finds no room is decided on its rule's overflow counter,
// one per rule and limit shared by the keys without room, gossiped like
// any key; a key another instance tells of that finds no room is not kept
// (Stats.Dropped), and its count is missing from this instance's
// decisions. A key longer than a message carries (64 KiB) is decided on its
// rule's overflow counter too. A record no instance writes (a count above
// any rate, a window beyond the year 146,000) is skipped on receipt; the
// decoder is fuzzed (FuzzReadMessage, FuzzWireRoundTrip). Each message
// carries the keys changed since the round every
// peer acknowledged, about 30 bytes and the key's length each, over TCP.
package gossip
