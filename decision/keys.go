package decision

import (
	"hash/maphash"
	"net/netip"
	"sync"

	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// keyCache keeps the store keys of one policy that requests ask for again
// and again, so that deciding them allocates nothing: a listed client's
// key of each rule, a global rule's, and an address's key of each rule
// that counts by address (stateKey). Keys that count by a header's value
// are made per request. The Engine keeps the cache of the policy it
// decided last, so that a new policy starts a new one and nothing of an
// old policy stays. It is bounded: a shard that fills up is emptied, so
// that callers from ever new addresses cost it no more than keyShards ×
// maxShardKeys keys.
type keyCache struct {
	pol    *policy.Compiled
	seed   maphash.Seed
	shards [keyShards]keyShard
}

const (
	keyShards    = 16
	maxShardKeys = 2048
)

type keyShard struct {
	mu   sync.RWMutex
	keys map[keyID]store.Key
}

// keyID is what a cached key depends on besides the policy: the rule, the
// caller (its id, plan and overrides: policy.Caller.StateTag, LimitSource)
// and, for a key that counts by address, the address.
type keyID struct {
	addr   netip.Addr
	caller *policy.Caller
	rule   int
}

// keysFor returns the key cache of pol.
func (e *Engine) keysFor(pol *policy.Compiled) *keyCache {
	if c := e.keys.Load(); c != nil && c.pol == pol {
		return c
	}
	c := &keyCache{pol: pol, seed: maphash.MakeSeed()}
	e.keys.Store(c)
	return c
}

func (c *keyCache) shard(id keyID) *keyShard {
	return &c.shards[maphash.Comparable(c.seed, id)%keyShards]
}

// key returns the cached key of id, or makes it with build and caches it.
func (c *keyCache) key(id keyID, build func() store.Key) store.Key {
	sh := c.shard(id)
	sh.mu.RLock()
	k, ok := sh.keys[id]
	sh.mu.RUnlock()
	if ok {
		return k
	}
	k = build()
	sh.mu.Lock()
	if sh.keys == nil || len(sh.keys) >= maxShardKeys {
		sh.keys = make(map[keyID]store.Key)
	}
	sh.keys[id] = k
	sh.mu.Unlock()
	return k
}
