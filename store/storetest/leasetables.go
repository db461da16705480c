package storetest

import (
	"math"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// LeaseTables returns every lease table of the suite: filling a key and
// releasing (twice, too), expiry at exactly the TTL, renewal, a clock
// going back, costs, zero and huge limits, a lowered limit, leases of
// different TTLs on one key, and keys that differ only in their encoding.
// The slice is new on each call.
func LeaseTables() []LeaseTable {
	return []LeaseTable{
		fillRelease(), leaseExpiry(), leaseRenew(), renewNeverShortens(), leaseClockBack(),
		leaseCosts(), zeroMax(), hugeMax(), limitLowered(), ttlPerLease(), defaultTTL(),
		leaseKeysByEncoding(),
	}
}

// grant is an Acquire that gets a lease, leaving inFlight slots held.
func grant(at time.Duration, cost, inFlight int64) LeaseStep {
	return LeaseStep{At: at, Op: Acquire, Cost: cost, Want: store.LeaseDecision{Allowed: true, InFlight: inFlight}}
}

// look is an Acquire of cost 0: allowed, holding nothing, while the key's
// inFlight is within the limit.
func look(at time.Duration, inFlight int64) LeaseStep { return grant(at, 0, inFlight) }

// full is an Acquire denied for now: inFlight are held and the cost does
// not fit beside them.
func full(at time.Duration, cost, inFlight int64) LeaseStep {
	return LeaseStep{At: at, Op: Acquire, Cost: cost, Want: store.LeaseDecision{InFlight: inFlight, RetryAfter: store.LeaseRetryAfter}}
}

// refuse is an Acquire denied for ever: its cost can never fit.
func refuse(at time.Duration, cost, inFlight int64) LeaseStep {
	return LeaseStep{At: at, Op: Acquire, Cost: cost, Want: store.LeaseDecision{InFlight: inFlight, RetryAfter: limiter.Never}}
}

// release gives back the lease of step of.
func release(at time.Duration, of int) LeaseStep { return LeaseStep{At: at, Op: Release, Of: of} }

// renew renews the lease of step of, which must report kept.
func renew(at time.Duration, of int, kept bool) LeaseStep {
	return LeaseStep{At: at, Op: Renew, Of: of, Kept: kept}
}

// under returns s acquired under limit c instead of the table's.
func (s LeaseStep) under(c store.Concurrency) LeaseStep {
	s.Limit = &c
	return s
}

// onKey returns s acquired on key instead of the table's.
func (s LeaseStep) onKey(key store.Key) LeaseStep {
	s.Key = key
	return s
}

// leaseTable builds a LeaseTable based at aligned, filling in each
// Acquire's Want.Limit from its limit.
func leaseTable(name string, c store.Concurrency, steps ...LeaseStep) LeaseTable {
	for i := range steps {
		if steps[i].Limit != nil {
			steps[i].Want.Limit = steps[i].Limit.Max
		} else {
			steps[i].Want.Limit = c.Max
		}
	}
	return LeaseTable{Name: name, Limit: c, Base: aligned, Steps: steps}
}

// Release frees exactly the lease's slot; releasing it again, or a denied
// step's zero Lease, frees nothing.
func fillRelease() LeaseTable {
	return leaseTable("fill_release", store.Concurrency{Max: 3, TTL: 10 * sec},
		grant(0, 1, 1), grant(0, 1, 2), grant(0, 1, 3),
		full(0, 1, 3),
		release(0, 0), // 4
		look(0, 2),
		grant(0, 1, 3), // 6
		release(0, 0),  // again
		full(0, 1, 3),
		release(0, 3), // step 3 was denied: the zero Lease
		full(0, 1, 3),
		release(0, 1), release(0, 2), release(0, 6),
		look(0, 0),
	)
}

// A lease counts while now < acquired + TTL; releasing an expired lease
// frees nothing more.
func leaseExpiry() LeaseTable {
	return leaseTable("expiry", store.Concurrency{Max: 2, TTL: 10 * sec},
		grant(0, 1, 1),     // until 10s
		grant(4*sec, 1, 2), // until 14s
		full(10*sec-us, 1, 2),
		grant(10*sec, 1, 2), // step 0 has expired; until 20s
		release(10*sec, 0),
		look(10*sec, 2),
		look(14*sec, 1), // step 1 has expired
		release(14*sec, 3),
		look(14*sec, 0),
	)
}

// Renewal at t keeps a lease until t + TTL; an expired or released lease
// is not renewed, nor is the zero Lease.
func leaseRenew() LeaseTable {
	return leaseTable("renew", store.Concurrency{Max: 1, TTL: 10 * sec},
		grant(0, 1, 1),
		renew(6*sec, 0, true), // until 16s
		full(15*sec, 1, 1),
		renew(15*sec, 0, true), // until 25s
		full(25*sec-us, 1, 1),
		look(25*sec, 0),
		renew(26*sec, 0, false), // expired
		grant(26*sec, 1, 1),     // 7
		release(27*sec, 7),
		renew(27*sec, 7, false), // released
		renew(27*sec, 2, false), // step 2 was denied: the zero Lease
		look(27*sec, 0),
	)
}

// A renewal at an earlier time (a clock gone back) never shortens a lease.
func renewNeverShortens() LeaseTable {
	return leaseTable("renew_never_shortens", store.Concurrency{Max: 1, TTL: 10 * sec},
		grant(hour, 1, 1), // until 1h10s
		renew(0, 0, true), // 0+10s is sooner: kept as it was
		renew(hour, 0, true),
		full(hour+10*sec-us, 1, 1),
		look(hour+10*sec, 0),
	)
}

// A clock gone back expires nothing; a lease acquired at the earlier time
// lasts its TTL from then.
func leaseClockBack() LeaseTable {
	return leaseTable("clock_back", store.Concurrency{Max: 2, TTL: 10 * sec},
		grant(hour, 1, 1), // until 1h10s
		grant(0, 1, 2),    // until 10s
		full(0, 1, 2),
		look(10*sec, 1),
		look(hour, 1),
		look(hour+10*sec, 0),
	)
}

// A lease holds cost slots. A cost of 0 holds nothing and is allowed while
// the key is within its limit; a cost above the limit is denied for ever,
// without overflow for the largest; a negative cost says nothing of the key.
func leaseCosts() LeaseTable {
	return leaseTable("costs", store.Concurrency{Max: 5, TTL: 10 * sec},
		grant(0, 3, 3),
		full(0, 3, 3),
		grant(0, 2, 5),
		look(0, 5),
		refuse(0, 6, 5),
		refuse(0, -1, 0),
		refuse(0, math.MaxInt64, 5),
		refuse(0, math.MinInt64, 0),
		release(0, 0),
		look(0, 2),
		grant(0, 3, 5),
	)
}

// A zero limit denies every request for ever, a look too.
func zeroMax() LeaseTable {
	return leaseTable("zero_max", store.Concurrency{TTL: 10 * sec},
		refuse(0, 1, 0), refuse(0, 0, 0), refuse(0, -1, 0), refuse(0, math.MaxInt64, 0),
	)
}

// The largest limit, 2^50, counts exactly at its edge.
func hugeMax() LeaseTable {
	const m = store.MaxConcurrency
	return leaseTable("huge_max", store.Concurrency{Max: m, TTL: 10 * sec},
		grant(0, m, m),
		full(0, 1, m),
		look(0, m),
		refuse(0, m+1, m),
		release(0, 0),
		grant(0, m-1, m-1), // 5
		grant(0, 1, m),
		full(0, 1, m),
		release(0, 5),
		look(0, 1),
	)
}

// A lowered limit takes the slots already held into account: new leases
// wait until enough of them end.
func limitLowered() LeaseTable {
	two := store.Concurrency{Max: 2, TTL: 10 * sec}
	return leaseTable("limit_lowered", store.Concurrency{Max: 3, TTL: 10 * sec},
		grant(0, 1, 1), grant(0, 1, 2), grant(0, 1, 3),
		full(0, 0, 3).under(two), // a look over the limit is denied
		full(0, 1, 3).under(two),
		release(0, 0),
		full(0, 1, 2).under(two),
		release(0, 1),
		grant(0, 1, 2).under(two),
	)
}

// Each lease keeps the TTL it was acquired with (a rule's TTL changed).
func ttlPerLease() LeaseTable {
	return leaseTable("ttl_per_lease", store.Concurrency{Max: 3, TTL: 10 * sec},
		grant(0, 1, 1),
		grant(0, 1, 2).under(store.Concurrency{Max: 3, TTL: sec}),
		look(sec-us, 2),
		look(sec, 1),
		renew(5*sec, 1, false),
		renew(5*sec, 0, true), // until 15s
		look(15*sec-us, 1),
		look(15*sec, 0),
	)
}

// A TTL of zero is DefaultLeaseTTL, 30s.
func defaultTTL() LeaseTable {
	return leaseTable("default_ttl", store.Concurrency{Max: 1},
		grant(0, 1, 1),
		full(30*sec-us, 1, 1),
		look(30*sec, 0),
	)
}

// Keys that a naive encoding would confuse hold their own leases.
func leaseKeysByEncoding() LeaseTable {
	keys := []store.Key{
		store.NewKey("a_b", "c"), store.NewKey("a", "b_c"),
		store.NewKey("a:b", "c"), store.NewKey("a", "b:c"),
		store.RawKey("a\x00b"), store.RawKey("a\x00c"), store.RawKey("{a}b"), store.RawKey("{a}c"), store.RawKey("%7Ba%7Db"), store.RawKey("a%"), store.RawKey("a%25"),
		store.GroupKey("g", "r"), store.GroupKey("g", "r", ""), store.GroupKey("g}", "r"),
	}
	var steps []LeaseStep
	for _, k := range keys {
		steps = append(steps, grant(0, 1, 1).onKey(k))
	}
	for _, k := range keys {
		steps = append(steps, full(0, 1, 1).onKey(k))
	}
	return leaseTable("keys_differ_by_encoding", store.Concurrency{Max: 1, TTL: 10 * sec}, steps...)
}
