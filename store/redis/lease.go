package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

var _ store.Leaser = (*Store)(nil)

// The lease scripts: lua/lib.lua, lua/lease.lua, then the operation's file.
var leaseAcquire, leaseRelease, leaseRenew = loadLeaseScripts()

func loadLeaseScripts() (acquire, release, renew *script) {
	head := mustRead("lua/lib.lua") + mustRead("lua/lease.lua")
	return newScript("lease acquire", head+mustRead("lua/lease_acquire.lua")),
		newScript("lease release", head+mustRead("lua/lease_release.lua")),
		newScript("lease renew", head+mustRead("lua/lease_renew.lua"))
}

// leaseIDs makes lease IDs: a random prefix drawn once per process, so
// that the instances sharing a Redis never make the same ID, and a count.
var leaseIDs = struct {
	prefix string
	n      atomic.Uint64
}{prefix: randomHex(8)}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand's documentation)
	return hex.EncodeToString(b)
}

// newLeaseID returns a lease ID no other lease of any instance has.
func newLeaseID() string {
	return leaseIDs.prefix + "." + strconv.FormatUint(leaseIDs.n.Add(1), 36)
}

// leaseKey returns the Redis key of a store key's leases: the key as
// redisKey writes it, under Options.Prefix + "lease:", so that a lease
// key never is a rate key of the same store and Cluster hash tags stay
// as they are (a group's leases and rate keys share a slot).
func leaseKey(prefix string, key store.Key) string { return redisKey(prefix+"lease:", key) }

// leaseMember returns a lease's member in its key's sorted set.
func leaseMember(l store.Lease) string { return strconv.FormatInt(l.Cost, 10) + ":" + l.ID }

// leaseNow returns ARGV[1] of a lease script: the caller's time with
// Options.CallerTime, else useRedisTime.
func (s *Store) leaseNow(now time.Time) string {
	if s.callerTime {
		return strconv.FormatInt(limiter.UnixMicro(now), 10)
	}
	return strconv.Itoa(useRedisTime)
}

// Acquire decides a lease of cost on key under limit, atomically in Redis
// in one script call (store.Concurrency.Decide on the key's leases that
// have not expired), at Redis TIME unless Options.CallerTime. A zero limit
// and a negative cost are answered without asking Redis. It returns the
// limit's error if limit.Check fails, and store.ErrClosed after Close.
func (s *Store) Acquire(ctx context.Context, key store.Key, limit store.Concurrency, now time.Time, cost int64) (store.LeaseDecision, error) {
	if err := limit.Check(); err != nil {
		return store.LeaseDecision{}, err
	}
	if s.closed.Load() {
		return store.LeaseDecision{}, store.ErrClosed
	}
	if !limit.Reads(cost) {
		return limit.Decide(0, cost), nil
	}
	if err := s.Connect(ctx); err != nil {
		return store.LeaseDecision{}, err
	}
	sent := min(cost, limit.Max+1) // every cost above the limit is denied alike
	ttl := limit.LeaseTTL()
	id := newLeaseID()
	tctx, cancel := s.withTimeout(ctx)
	defer cancel()
	res := s.evalScript(tctx, leaseAcquire, []string{leaseKey(s.prefix, key)}, s.leaseNow(now),
		strconv.FormatInt(sent, 10), strconv.FormatInt(limit.Max, 10), strconv.FormatInt(int64(ttl/time.Microsecond), 10), id)
	v, err := res.AsIntSlice()
	if err == nil && (len(v) != 2 || v[0] != 0 && v[0] != 1 || v[1] < 0) {
		err = fmt.Errorf("reply %v, want [0 or 1, in flight >= 0]", v)
	}
	if err != nil {
		return store.LeaseDecision{}, s.failed(ctx, leaseAcquire, err)
	}
	// The script decided; Decide on the count before it says the rest
	// (RetryAfter), and must agree.
	before := v[1]
	if v[0] == 1 {
		before -= cost
	}
	d := limit.Decide(before, cost)
	if d.Allowed != (v[0] == 1) {
		return store.LeaseDecision{}, s.failed(ctx, leaseAcquire, fmt.Errorf("reply %v disagrees with the limit %d for cost %d", v, limit.Max, cost))
	}
	if d.Allowed && cost > 0 {
		d.Lease = store.Lease{Key: key, ID: id, Cost: cost, TTL: ttl}
	}
	return d, nil
}

// Release gives lease's slots back in one script call; an expired,
// released or unknown lease (or the zero Lease) changes nothing. It
// returns store.ErrClosed after Close.
func (s *Store) Release(ctx context.Context, lease store.Lease, now time.Time) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if lease.IsZero() {
		return nil
	}
	if err := s.Connect(ctx); err != nil {
		return err
	}
	tctx, cancel := s.withTimeout(ctx)
	defer cancel()
	res := s.evalScript(tctx, leaseRelease, []string{leaseKey(s.prefix, lease.Key)}, s.leaseNow(now), leaseMember(lease))
	if err := res.Error(); err != nil {
		return s.failed(ctx, leaseRelease, err)
	}
	return nil
}

// Renew renews leases, one script call per key, all sent in one pipeline
// (in a Cluster, to their nodes in parallel). A key's call that fails
// reports its leases not kept and Renew returns the first such error with
// the answers of the others; store.ErrClosed after Close.
func (s *Store) Renew(ctx context.Context, leases []store.Lease, now time.Time) ([]bool, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	kept := make([]bool, len(leases))
	byKey := make(map[store.Key][]int) // lease indices by key, zero Leases left out
	var keys []store.Key
	for i, l := range leases {
		if l.IsZero() {
			continue
		}
		if _, ok := byKey[l.Key]; !ok {
			keys = append(keys, l.Key)
		}
		byKey[l.Key] = append(byKey[l.Key], i)
	}
	if len(keys) == 0 {
		return kept, nil
	}
	if err := s.Connect(ctx); err != nil {
		return nil, err
	}
	tctx, cancel := s.withTimeout(ctx)
	defer cancel()
	calls := make([][]string, len(keys)) // each key's args
	for i, key := range keys {
		args := []string{s.leaseNow(now)}
		for _, j := range byKey[key] {
			args = append(args, leaseMember(leases[j]), strconv.FormatInt(int64(leases[j].TTL/time.Microsecond), 10))
		}
		calls[i] = args
	}
	var first error
	for i, res := range s.renewAll(tctx, keys, calls) {
		v, err := res.AsIntSlice()
		if err == nil && len(v) != len(byKey[keys[i]]) {
			err = fmt.Errorf("reply has %d answers for %d leases", len(v), len(byKey[keys[i]]))
		}
		if err != nil {
			if first == nil {
				first = s.failed(ctx, leaseRenew, err)
			}
			continue
		}
		for k, j := range byKey[keys[i]] {
			kept[j] = v[k] == 1
		}
	}
	return kept, first
}

// renewAll sends the renew script for each key with its args in one
// pipeline, by SHA-1, and again whole to nodes that answered NOSCRIPT.
func (s *Store) renewAll(tctx context.Context, keys []store.Key, args [][]string) []rueidis.RedisResult {
	cmds := make(rueidis.Commands, len(keys))
	for i, key := range keys {
		cmds[i] = leaseRenew.command(s.client.B(), true, []string{leaseKey(s.prefix, key)}, args[i]...)
	}
	results := s.client.DoMulti(tctx, cmds...)
	for i, res := range results {
		if isNoScript(res.Error()) {
			results[i] = s.client.Do(tctx, leaseRenew.command(s.client.B(), false, []string{leaseKey(s.prefix, keys[i])}, args[i]...))
		}
	}
	return results
}
