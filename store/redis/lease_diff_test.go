package redis

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
)

// TestLeaseDifferential replays random lease operations through the
// memory store (Go) and the Redis store (Lua) at the same caller times and
// compares every answer: acquires of costs 0 to 3 on three keys under
// limits of 0 to 5 with TTLs of 1s and 5s, releases and renewals of any
// earlier lease (held, expired, released or never granted), and a clock
// that mostly moves on by up to 3s and sometimes goes back.
func TestLeaseDifferential(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	for seed := range uint64(4) {
		mem := memory.New(memory.Options{Clock: clock.NewFake(epoch)})
		t.Cleanup(func() { mem.Close() })
		diffLeases(t, seed, mem, open(t, []string{srv.Addr}, true), 300)
	}
}

// diffLeases runs steps random operations on a and b and fails at the
// first answer on which they differ.
func diffLeases(t *testing.T, seed uint64, a, b store.Leaser, steps int) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 7))
	keys := []store.Key{store.NewKey("r", "a"), store.NewKey("r", "b"), store.GroupKey("c", "r")}
	var la, lb []store.Lease // the leases granted so far, step by step
	now := epoch
	for i := range steps {
		if rng.IntN(8) == 0 {
			now = now.Add(-time.Duration(rng.IntN(3000)) * time.Millisecond)
		} else {
			now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		}
		switch op := rng.IntN(6); {
		case op < 3 || len(la) == 0:
			key := keys[rng.IntN(len(keys))]
			limit := store.Concurrency{Max: int64(rng.IntN(6)), TTL: []time.Duration{time.Second, 5 * time.Second}[rng.IntN(2)]}
			cost := int64(rng.IntN(4))
			da, ea := a.Acquire(ctx, key, limit, now, cost)
			db, eb := b.Acquire(ctx, key, limit, now, cost)
			if ea != nil || eb != nil {
				t.Fatalf("seed %d step %d: errors %v, %v", seed, i, ea, eb)
			}
			if !sameLeaseDecision(da, db) {
				t.Fatalf("seed %d step %d: Acquire(%q, %+v, cost %d):\n  Go %+v\n Lua %+v", seed, i, key, limit, cost, da, db)
			}
			la, lb = append(la, da.Lease), append(lb, db.Lease)
		case op < 5:
			j := rng.IntN(len(la))
			if ea, eb := a.Release(ctx, la[j], now), b.Release(ctx, lb[j], now); ea != nil || eb != nil {
				t.Fatalf("seed %d step %d: errors %v, %v", seed, i, ea, eb)
			}
		default:
			var sa, sb []store.Lease
			for j := range la {
				if rng.IntN(3) == 0 {
					sa, sb = append(sa, la[j]), append(sb, lb[j])
				}
			}
			ka, ea := a.Renew(ctx, sa, now)
			kb, eb := b.Renew(ctx, sb, now)
			if ea != nil || eb != nil || !slices.Equal(ka, kb) {
				t.Fatalf("seed %d step %d: Renew of %d leases: Go %v (%v), Lua %v (%v)", seed, i, len(sa), ka, ea, kb, eb)
			}
		}
	}
}

// sameLeaseDecision reports whether two stores' decisions agree: all but
// the lease's ID, which each store makes its own.
func sameLeaseDecision(a, b store.LeaseDecision) bool {
	a.Lease.ID, b.Lease.ID = "", ""
	return a == b
}
