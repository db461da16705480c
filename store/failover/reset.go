package failover

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-rl/sluice/store"
)

var _ store.Resetter = (*Store)(nil)

// Reset resets key everywhere it is counted: its cached rejection here
// (forgotten before and again after the shared store's reset, so that a
// denial cached meanwhile does not outlive it), the local fallback's
// counter, and the shared counter, whose store tells the other instances
// (a store.ResetFeed: each forgets its cached rejection and its fallback's
// counter of the key too; see New). While the shared store cannot be
// reached the local parts are reset and its error is returned.
func (s *Store) Reset(ctx context.Context, key store.Key) error {
	s.forget(key)
	var err error
	if r, ok := s.opts.Shared.(store.Resetter); ok {
		err = r.Reset(ctx, key)
	} else {
		err = fmt.Errorf("failover: the shared store cannot reset a key (%T)", s.opts.Shared)
	}
	s.denied.forget(key)
	var unconfirmed *store.UnconfirmedResetError
	if err != nil && !errors.As(err, &unconfirmed) {
		return fmt.Errorf("failover: reset: %w", err)
	}
	return err
}

// forget forgets what this instance keeps of key: its cached rejection and
// the local fallback's counter; the zero Key forgets every cached rejection (the
// fallback's counters stay: they are what degraded counting runs on).
func (s *Store) forget(key store.Key) {
	if key == (store.Key{}) {
		s.denied.clear()
		return
	}
	s.denied.forget(key)
	if r, ok := s.opts.Fallback.(store.Resetter); ok {
		_ = r.Reset(context.Background(), key) // a memory store fails only once closed
	}
}

// forget drops key's denial.
func (ds *denials) forget(key store.Key) {
	sh := ds.shard(key)
	sh.mu.Lock()
	delete(sh.m, key)
	sh.mu.Unlock()
}

// clear drops every denial.
func (ds *denials) clear() {
	for i := range ds.shards {
		sh := &ds.shards[i]
		sh.mu.Lock()
		clear(sh.m)
		sh.mu.Unlock()
	}
}
