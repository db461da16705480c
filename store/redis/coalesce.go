package redis

import (
	"context"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// Coalescing a hot key's decisions.
//
// One caller flooding one key (seed 000's buggy partner) makes many
// concurrent decisions on one Redis key. Each alone costs Redis a script
// call whose fixed part (EVALSHA, TIME, reading and writing the key) is
// most of the work. So while a call on a key is in flight, the next
// requests on that key wait for it and then go together, in one call of
// the algorithm's batch script (lua/batch_begin.lua), which decides them
// one after another at one Redis time, each exactly as its own call would
// have been. A key with fewer than keyFlights calls in flight goes at
// once: coalescing adds no wait of its own; a request waits for the calls
// before it, as it would have waited behind them in Redis.

// maxBatch bounds the requests of one batch call: its script holds Redis
// for as long as it decides them all (sliding_log's reads and writes its
// list for each), and other keys wait meanwhile.
const maxBatch = 64

// flight is a key with a call in flight, and the requests waiting for it.
type flight struct {
	call    call // the first call; only requests with its time and limit join
	flying  int  // calls in flight on the key, at most keyFlights
	waiting []*waiter
}

// keyFlights is how many calls may be in flight on one key before its
// requests wait to go together: two, so that Redis decides one batch
// while the client writes the next and reads the answer of the one
// before. With one, a hot key was bound by the round trip, with neither
// Redis nor the client busy (bench/tools/redisbench -mode hot, 3 s: 26
// decisions per script call, Redis at 0.63 of a core); with two, 1.06 times
// the decisions of one (rounds 0.99 to 1.15, the order alternated, load
// average 1.7 to 2.5), and a lower p99 in five rounds of six. Each call
// is atomic in Redis, so two in flight on one key decide as one after
// another, in whichever order Redis runs them.
const keyFlights = 2

// waiter is a request waiting for a call in flight: on its key
// (coalesce), or of its slot group (viaSlot).
type waiter struct {
	ctx  context.Context // the caller's
	c    call            // its own call (its cost capped as newCall caps it)
	by   time.Time       // when Options.Timeout from its arrival ends
	done chan outcome    // buffered: delivering never blocks
}

// flights recycles the flights of keys that are free again.
var flights = sync.Pool{New: func() any { return new(flight) }}

// waiters recycles the waiters that were answered, with their channels,
// so that a request that waits allocates neither.
var waiters = sync.Pool{New: func() any { return &waiter{done: make(chan outcome, 1)} }}

// outcome is a waiter's answer.
type outcome struct {
	d   limiter.Decision
	err error
}

// coalesce decides c at once if fewer than keyFlights calls are in flight
// on its key, else waits to go with the next batch on the key.
func (s *Store) coalesce(ctx context.Context, c call) (limiter.Decision, error) {
	s.mu.Lock()
	f, busy := s.flights[c.key]
	switch {
	case !busy:
		f = flights.Get().(*flight)
		f.call = c
		s.flights[c.key] = f
	case f.call.req[8:] != c.req[8:]: // another limit, or with CallerTime another time
		s.mu.Unlock()
		return s.decideOne(ctx, c)
	}
	if f.flying < keyFlights && len(f.waiting) == 0 { // none waits ahead of it
		f.flying++
		s.mu.Unlock()
		d, err := s.viaSlot(ctx, c) // it may go with other keys' requests (keys.go)
		s.land(c.key)
		return d, err
	}
	// A waiter's deadline runs from its arrival, as its own call's would:
	// waiting for the call in flight and then for its batch must not take
	// longer than Options.Timeout either. It needs no timer of its own (a
	// timer per waiter was 13% of the client's CPU in a profile of
	// bench/tools/redisbench -mode hot -cpuprofile):
	// the waiters go in the order they came, the call in flight ends by its
	// own deadline, which is earlier, and each batch by its waiters'
	// earliest (decideBatch); one found past it is answered at once (next).
	return s.await(ctx, c, &f.waiting)
}

// await queues a waiter for c on q, with s.mu held, which it unlocks, and
// returns its answer, or its caller's end.
func (s *Store) await(ctx context.Context, c call, q *[]*waiter) (limiter.Decision, error) {
	w := waiters.Get().(*waiter)
	w.ctx, w.c, w.by = ctx, c, time.Now().Add(s.timeout)
	*q = append(*q, w)
	s.mu.Unlock()
	select {
	case o := <-w.done:
		w.ctx, w.c = nil, call{}
		waiters.Put(w) // answered: nothing refers to it any more
		return o.d, o.err
	case <-ctx.Done(): // w stays out of the pool: its answer may still come
		return limiter.Decision{}, s.failed(ctx, c.sc, ctx.Err())
	}
}

// takeBatch takes, with s.mu held, the next batch of q's waiters, at most
// maxBatch, leaving out those whose callers have gone and answering those
// past their deadlines (one would end its batch's call at once); after
// Close it answers them all with store.ErrClosed. sc names the script in
// errors.
func (s *Store) takeBatch(q *[]*waiter, sc *script) []*waiter {
	var batch []*waiter
	now := time.Now()
	for len(*q) > 0 && len(batch) < maxBatch {
		w := (*q)[0]
		(*q)[0] = nil
		*q = (*q)[1:]
		switch {
		case s.closed.Load():
			w.done <- outcome{err: store.ErrClosed}
		case w.ctx.Err() != nil: // its caller has gone
		case !now.Before(w.by):
			w.answer(limiter.Decision{}, context.DeadlineExceeded, s, sc)
		default:
			batch = append(batch, w)
		}
	}
	return batch
}

// earliest is the earliest of batch's deadlines: a batch's call ends by
// it, so that none of its waiters waits longer than its own call could
// have; never by a caller's own deadline, as the batch is not any one
// caller's (a waiter whose caller goes leaves at once, alone).
func earliest(batch []*waiter) time.Time {
	by := batch[0].by
	for _, w := range batch[1:] {
		if w.by.Before(by) {
			by = w.by
		}
	}
	return by
}

// land ends a call in flight on key: the requests that waited go, from a
// goroutine of their own, as the next call; with none, the key is free
// again once its other calls have landed too.
func (s *Store) land(key string) {
	if c, batch := s.next(key, true); batch != nil {
		go s.fly(key, c, batch)
	}
}

// fly decides batch, then whatever waited meanwhile, until the key is free.
func (s *Store) fly(key string, c call, batch []*waiter) {
	defer s.wg.Done()
	for batch != nil {
		s.decideBatch(c, batch)
		c, batch = s.next(key, false)
	}
}

// next ends a call on key and takes the next batch of key's waiters, at
// most maxBatch, leaving out those whose callers have gone, and answering
// those past their deadlines. With none left it returns nil, and frees the
// key if no other call of it is in flight. After Close it answers them all
// with store.ErrClosed. With spawn, a batch is counted in s.wg for the
// goroutine the caller starts.
func (s *Store) next(key string, spawn bool) (call, []*waiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.flights[key]
	batch := s.takeBatch(&f.waiting, f.call.sc)
	if len(batch) == 0 {
		if f.flying--; f.flying > 0 {
			return call{}, nil
		}
		delete(s.flights, key)
		f.call, f.waiting = call{}, f.waiting[:0]
		flights.Put(f) // out of s.flights, it is nobody's
		return call{}, nil
	}
	if spawn {
		s.wg.Add(1) // under s.mu, which Close takes before it waits
	}
	return f.call, batch
}

// decideBatch decides the waiters' requests in one call, ended by their
// earliest deadline, and answers each.
func (s *Store) decideBatch(c call, batch []*waiter) {
	tctx, cancel := context.WithDeadline(context.Background(), earliest(batch))
	defer cancel()
	first := c.withCost(batch[0].c.cost)
	if len(batch) == 1 {
		d, err := s.eval(tctx, first)
		batch[0].answer(d, err, s, c.sc)
		return
	}
	more := make([]byte, 8*(len(batch)-1))
	for i, w := range batch[1:] {
		putDouble(more[8*i:], w.c.cost)
	}
	res := s.evalScript(tctx, c.sc.batch, []string{c.key}, first.req, string(more))
	ds, err := parseBatchReply(res, c.burst, len(batch))
	for i, w := range batch {
		var d limiter.Decision
		if err == nil {
			d = ds[i]
		}
		w.answer(d, err, s, c.sc.batch)
	}
}

// answer delivers a decision, or err as s.failed wraps it for the waiter.
func (w *waiter) answer(d limiter.Decision, err error, s *Store, sc *script) {
	if err != nil {
		w.done <- outcome{err: s.failed(w.ctx, sc, err)}
		return
	}
	w.done <- outcome{d: d}
}

// withCost returns c with its request's cost replaced.
func (c call) withCost(cost int64) call {
	var b [8]byte
	putDouble(b[:], cost)
	c.req, c.cost = string(b[:])+c.req[8:], cost
	return c
}
