package redis

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/sluice-rl/sluice/store"
)

var (
	_ store.Resetter  = (*Store)(nil)
	_ store.ResetFeed = (*Store)(nil)
)

const (
	// confirmWait bounds how long Reset waits for the instances it told
	// to confirm: each confirms as soon as its message arrives, within a
	// round trip of Redis.
	confirmWait = time.Second
	// resubscribeEvery is the pause before the reset feed subscribes
	// again after losing its subscription.
	resubscribeEvery = time.Second
	// pendingAcks is how many confirmations an instance may owe at once;
	// beyond it, a reset's instance does not confirm (its reset still
	// happens), and the one who reset waits for it in vain.
	pendingAcks = 64
)

// resetChannel is the sharded pub/sub channel (SSUBSCRIBE, Redis 7.0+) of
// a store's resets: Options.Prefix + "resets:{resets}". One hash tag, so
// that on a Cluster every instance subscribes on the node that owns its
// slot, and SPUBLISH's answer counts every instance it told.
func resetChannel(prefix string) string { return prefix + "resets:{resets}" }

// A reset's message is "r <nonce> <store key>"; a confirmation is
// "a <nonce>". The nonce names the reset among all instances' resets.

// resetFeed is the store's side of its reset channel: who forgets
// (WatchResets), and the resets of this store waiting for confirmations.
type resetFeed struct {
	mu      sync.Mutex
	forget  func(key store.Key)
	waiting map[string]*confirmations
	stop    context.CancelFunc // ends the watcher; nil until WatchResets
	done    chan struct{}      // closed when the watcher has ended
	acks    chan string        // the nonces this instance has yet to confirm
	hearing atomic.Bool        // the subscription is made (Hearing)
}

// confirmations counts the instances that confirmed one reset.
type confirmations struct {
	n    int
	more chan struct{} // a token per confirmation
}

// Reset deletes key's state in Redis (its rate key and its lease key, in
// one DEL: they share a hash slot), then tells every instance watching the
// store's resets (WatchResets, on the same Redis and Prefix, this one
// included) to forget what it keeps of the key, and waits up to a second
// for each to confirm. It returns a *store.UnconfirmedResetError when some
// did not confirm in time; the key is reset all the same.
func (s *Store) Reset(ctx context.Context, key store.Key) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if err := s.Connect(ctx); err != nil {
		return err
	}
	tctx, cancel := s.withTimeout(ctx)
	defer cancel()
	b := s.client.B()
	if err := s.client.Do(tctx, b.Del().Key(redisKey(s.prefix, key), leaseKey(s.prefix, key)).Build()).Error(); err != nil {
		return fmt.Errorf("redis store: reset: %w", err)
	}
	nonce := newLeaseID()
	c := s.feed.expect(nonce)
	defer s.feed.forgetNonce(nonce)
	told, err := s.client.Do(tctx, b.Spublish().Channel(resetChannel(s.prefix)).Message("r "+nonce+" "+key.Wire()).Build()).AsInt64()
	if err != nil {
		return fmt.Errorf("redis store: counter reset, but the instances could not be told: %w", err)
	}
	if c == nil || told == 0 {
		return nil // this store watches no resets: it cannot hear the confirmations
	}
	return c.wait(ctx, int(told))
}

// wait waits until told instances have confirmed, for at most
// confirmWait or until ctx ends.
func (c *confirmations) wait(ctx context.Context, told int) error {
	timer := time.NewTimer(confirmWait)
	defer timer.Stop()
	got := 0
	for got < told {
		select {
		case <-c.more:
			got++
		case <-timer.C:
			return &store.UnconfirmedResetError{Confirmed: got, Told: told}
		case <-ctx.Done():
			return &store.UnconfirmedResetError{Confirmed: got, Told: told}
		}
	}
	return nil
}

// WatchResets makes the store subscribe to its reset channel and call
// forget with the key of every reset made there (store.ResetFeed), until
// Close: forget(store.Key{}) each time the subscription is made (or made again
// after it was lost), as resets may have been missed meanwhile, and each
// time it is lost. A lazy store subscribes once it has connected; Hearing
// says when it has.
func (s *Store) WatchResets(forget func(key store.Key)) {
	f := &s.feed
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forget = forget
	if f.stop != nil || s.closed.Load() {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.stop, f.done, f.acks = cancel, make(chan struct{}), make(chan string, pendingAcks)
	go s.watch(ctx)
}

// watch holds the reset subscription until ctx ends, subscribing again a
// second after it is lost, and confirms the resets it hears.
func (s *Store) watch(ctx context.Context) {
	defer close(s.feed.done)
	var wg sync.WaitGroup
	wg.Go(func() { s.confirm(ctx) })
	defer wg.Wait()
	hooked := rueidis.WithOnSubscriptionHook(ctx, func(sub rueidis.PubSubSubscription) {
		switch sub.Kind {
		case "ssubscribe":
			s.feed.call(store.Key{})
			s.feed.hearing.Store(true)
		case "sunsubscribe": // a Cluster's slot moved: subscribed again on its new node
			s.feed.hearing.Store(false)
			s.feed.call(store.Key{})
		}
	})
	for ctx.Err() == nil {
		if s.Connect(ctx) == nil {
			sub := s.client.B().Ssubscribe().Channel(resetChannel(s.prefix)).Build()
			_ = s.client.Receive(hooked, sub, s.heard) // returns when the subscription is lost, or at Close
			s.feed.hearing.Store(false)
			s.feed.call(store.Key{})
		}
		select {
		case <-ctx.Done():
		case <-time.After(resubscribeEvery):
		}
	}
}

// Hearing reports whether the store's reset subscription is made
// (store.ResetFeed): an instance that caches rejections does so only
// then, for a reset made elsewhere reaches it only then.
func (s *Store) Hearing() bool { return s.feed.hearing.Load() }

// heard handles one message of the reset channel. It runs on the
// client's reading goroutine, so it sends nothing itself: confirm does.
func (s *Store) heard(msg rueidis.PubSubMessage) {
	kind, rest, _ := strings.Cut(msg.Message, " ")
	switch kind {
	case "r":
		nonce, wire, ok := strings.Cut(rest, " ")
		if !ok {
			return
		}
		key, parsed := store.ParseWire(wire)
		if !parsed { // a key this version cannot read (an older instance's): forget every key
			key = store.Key{}
		}
		s.feed.call(key)
		select {
		case s.feed.acks <- nonce:
		default: // too many owed: the resetter stops waiting after confirmWait
		}
	case "a":
		s.feed.confirmed(rest)
	}
}

// confirm publishes the confirmations heard resets owe, until ctx ends.
func (s *Store) confirm(ctx context.Context) {
	ch := resetChannel(s.prefix)
	for {
		select {
		case <-ctx.Done():
			return
		case nonce := <-s.feed.acks:
			tctx, cancel := s.withTimeout(ctx)
			_ = s.client.Do(tctx, s.client.B().Spublish().Channel(ch).Message("a "+nonce).Build()).Error()
			cancel()
		}
	}
}

// call calls the forget function, if any.
func (f *resetFeed) call(key store.Key) {
	f.mu.Lock()
	forget := f.forget
	f.mu.Unlock()
	if forget != nil {
		forget(key)
	}
}

// expect registers a reset of this store's by its nonce, to count its
// confirmations; nil when the store watches no resets.
func (f *resetFeed) expect(nonce string) *confirmations {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stop == nil {
		return nil
	}
	if f.waiting == nil {
		f.waiting = make(map[string]*confirmations)
	}
	c := &confirmations{more: make(chan struct{}, 1024)}
	f.waiting[nonce] = c
	return c
}

// confirmed counts a confirmation of the reset nonce names, if it is this
// store's.
func (f *resetFeed) confirmed(nonce string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.waiting[nonce]; c != nil {
		select {
		case c.more <- struct{}{}:
		default:
		}
	}
}

// forgetNonce stops counting a reset's confirmations.
func (f *resetFeed) forgetNonce(nonce string) {
	f.mu.Lock()
	delete(f.waiting, nonce)
	f.mu.Unlock()
}

// close ends the watcher, if any, and waits for it.
func (f *resetFeed) close() {
	f.mu.Lock()
	stop, done := f.stop, f.done
	f.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}
