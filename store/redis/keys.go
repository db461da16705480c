package redis

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/rueidis"

	"github.com/sluice-rl/sluice/limiter"
)

// Deciding requests on different keys of one hash slot together.
//
// Many callers on many keys (Envoy's 64 calls in flight, each on its own
// key) make as many script calls, each with the fixed part a script call
// costs Redis and the client (EVALSHA, its command and reply, a write to
// the socket). So at most slotFlights calls are in flight per hash slot
// (per server, on a standalone Redis, where any keys may share a script)
// and algorithm; a request that finds them all busy waits, and when one
// lands the requests that waited meanwhile go together, in one call of the
// algorithm's keys script (lua/keys.lua), which decides each on its own key
// exactly as its own call would have, all at one Redis time read once
// (lua/keys_time.lua), as a hot key's batch is. A request that finds a
// call free goes at once: this adds no wait of its own, as coalesce.go
// does for one key.
// Requests on one key still coalesce first (coalesce.go): only the first of
// a key's requests comes here.

// slotFlights is how many calls may be in flight per slot group before
// requests wait to go together: two, so that Redis decides one batch
// while the client reads the answers of the one before. Under
// bench/tools/rlsload -concurrency 64 on 100,000 keys, 1, 2 and 4 spent
// the same CPU per decision within the noise of a shared machine (sluice
// 21 to 26 µs, Redis 8 to 10 µs, load average 12 to 14).
const slotFlights = 2

// slotGroup names the calls that may go together: one algorithm's, on one
// hash slot (0 for every key of a standalone Redis).
type slotGroup struct {
	slot uint16
	sc   *script
}

// slotQueue is a slot group's calls in flight and the requests waiting.
type slotQueue struct {
	flying  int
	waiting []*waiter
}

// keysScripts are the algorithms' keys scripts, by their own scripts.
var keysScripts = loadKeysScripts()

// loadKeysScripts builds each algorithm's keys script from the files its
// own script is made of (loadScripts), with lua/keys_time.lua after
// lua/lib.lua.
func loadKeysScripts() map[*script]*script {
	lib, common, save := mustRead("lua/lib.lua"), mustRead("lua/common.lua"), mustRead("lua/save.lua")
	clock, end := mustRead("lua/keys_time.lua"), mustRead("lua/keys.lua")
	out := make(map[*script]*script, len(limiter.Algorithms))
	for _, alg := range limiter.Algorithms {
		state, write := mustRead("lua/state.lua"), ""
		if alg == limiter.SlidingLog {
			state, write = "local tag\n", mustRead("lua/sliding_log_write.lua")
		}
		named := fmt.Sprintf("local alg = %d -- %s\n", alg, alg)
		body := mustRead("lua/" + alg.String() + ".lua")
		out[scripts[alg]] = newScript(alg.String()+" keys", lib+clock+"local function decide_one(KEYS, ARGV)\n"+
			named+common+state+body+write+save+"end\n"+end)
	}
	return out
}

// viaSlot decides c, the first request on its key, at once if its slot
// group has a call free, else with the next call of the group.
func (s *Store) viaSlot(ctx context.Context, c call) (limiter.Decision, error) {
	g := s.slotGroup(c)
	s.mu.Lock()
	q := s.slots[g]
	if q == nil {
		q = &slotQueue{}
		s.slots[g] = q
	}
	if q.flying < slotFlights {
		q.flying++
		s.mu.Unlock()
		d, err := s.decideOne(ctx, c)
		s.slotLand(g, true)
		return d, err
	}
	// No timer of its own: the call it goes with ends by its deadline
	// (keysBatch), and the one before by that call's own.
	return s.await(ctx, c, &q.waiting)
}

// slotGroup is c's slot group.
func (s *Store) slotGroup(c call) slotGroup {
	if s.client.Mode() != rueidis.ClientModeCluster {
		return slotGroup{sc: c.sc}
	}
	return slotGroup{slot: keySlot(c.key), sc: c.sc}
}

// slotLand ends a call of g: the requests that waited go, from a
// goroutine of their own (counted in s.wg when spawn), as the next call;
// with none, the call is free again.
func (s *Store) slotLand(g slotGroup, spawn bool) {
	if batch := s.nextKeys(g, spawn); batch != nil {
		go s.flyKeys(g, batch)
	}
}

// flyKeys decides batch, then whatever waited meanwhile, until none wait.
func (s *Store) flyKeys(g slotGroup, batch []*waiter) {
	defer s.wg.Done()
	for batch != nil {
		s.keysBatch(g.sc, batch)
		batch = s.nextKeys(g, false)
	}
}

// nextKeys takes the next batch of g's waiters, at most maxBatch, leaving
// out those whose callers have gone, and answering those past their
// deadlines. With none left, the call is free (and
// a group with none in flight forgotten) and it returns nil. After Close
// it answers them all with store.ErrClosed. With spawn, a batch is counted
// in s.wg for the goroutine the caller starts.
func (s *Store) nextKeys(g slotGroup, spawn bool) []*waiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.slots[g]
	batch := s.takeBatch(&q.waiting, g.sc)
	if len(batch) == 0 {
		if q.flying--; q.flying == 0 {
			delete(s.slots, g)
		}
		return nil
	}
	if spawn {
		s.wg.Add(1) // under s.mu, which Close takes before it waits
	}
	return batch
}

// keysBatch decides the waiters' requests in one call of sc's keys
// script and answers each. The call ends by the earliest of the waiters'
// deadlines, Options.Timeout from each one's arrival, so that none waits
// longer than its own call could have. A caller's own deadline or
// cancellation ends only a call of its request alone: in a batch it
// would fail the others' requests, whose callers are still there (a
// caller that goes leaves on its own, viaSlot).
func (s *Store) keysBatch(sc *script, batch []*waiter) {
	parent := context.Background()
	if len(batch) == 1 {
		parent = batch[0].ctx
	}
	tctx, cancel := context.WithDeadline(parent, earliest(batch))
	defer cancel()
	if len(batch) == 1 {
		d, err := s.eval(tctx, batch[0].c)
		batch[0].answer(d, err, s, sc)
		return
	}
	keys, args := make([]string, len(batch)), make([]string, len(batch))
	for i, w := range batch {
		keys[i], args[i] = w.c.key, w.c.req
	}
	res := s.evalScript(tctx, keysScripts[sc], keys, args...)
	replies, err := res.ToArray()
	if err == nil && len(replies) != len(batch) {
		err = fmt.Errorf("keys reply has %d elements, want %d", len(replies), len(batch))
	}
	for i, w := range batch {
		if err != nil {
			w.answer(limiter.Decision{}, err, s, sc)
			continue
		}
		d, derr := parseKeyReply(&replies[i], w.c.burst)
		w.answer(d, derr, s, sc)
	}
}

// parseKeyReply is parseReply for one element of a keys script's reply.
func parseKeyReply(m *rueidis.RedisMessage, burst int64) (limiter.Decision, error) {
	str, err := m.ToString()
	if err != nil {
		return limiter.Decision{}, err
	}
	if len(str) != replyLen {
		return limiter.Decision{}, fmt.Errorf("reply has %d bytes, want %d", len(str), replyLen)
	}
	return parseDecision(str, burst)
}

// keySlot is the Redis Cluster hash slot of key: CRC16 (XMODEM) of its
// hash tag, or of the whole key when it has none, modulo 16384.
func keySlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc & 16383
}
