package memory

import (
	"context"
	"hash/maphash"

	"github.com/sluice-rl/sluice/store"
)

var _ store.Resetter = (*Store)(nil)

// Reset forgets key: its rate state (with a sliding_log's entries) and
// its concurrency leases, so that its next request starts afresh. The
// overflow counter a key without room was decided on is not reset: it is
// shared by every such key of the rule. It returns store.ErrClosed after
// Close.
func (s *Store) Reset(_ context.Context, k store.Key) error {
	key := k.String()
	h := maphash.String(s.seed, key)
	sh := &s.shards[h&s.mask]
	sh.mu.Lock()
	closed := sh.closed
	if i := sh.tab.find(h, key); i >= 0 && !closed {
		sh.removeAt(i)
	}
	sh.mu.Unlock()
	if closed {
		return store.ErrClosed
	}
	ls := s.leaseShard(key)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if k := ls.keys[key]; k != nil {
		for i := len(k.leases) - 1; i >= 0; i-- {
			ls.removeLease(key, k, i)
		}
	}
	return nil
}
