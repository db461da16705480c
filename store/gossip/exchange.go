package gossip

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"math"

	"github.com/hashicorp/memberlist"
	"github.com/sluice-rl/sluice/limiter"
)

// peer is another instance as this one tracks it.
type peer struct {
	node memberlist.Node
	// inc is the incarnation heard from it (0: none yet). A new one is a
	// restarted instance, which has heard nothing of this one.
	inc uint64
	// acked is the last round of this instance's it acknowledged; first
	// the first round built since it joined (or restarted): only a round
	// from first on was built for it, carrying every count.
	acked, first uint64
	// synced reports that it sent this incarnation every count it had (a
	// message built since nothing of it was acknowledged).
	synced bool
	busy   bool // a message to it is on its way
}

// view is what Decide needs of the peers, replaced whole on each change.
type view struct {
	alone    bool   // no peer: this instance's counts are the fleet's
	minAcked uint64 // the least round every peer acknowledged
	synced   bool   // every peer sent its counts
}

// slotKey names an incarnation of an instance, whose counts a slot holds.
type slotKey struct {
	name string
	inc  uint64
}

// setView recomputes the view. Called with s.mu held.
func (s *Store) setView() {
	v := &view{alone: len(s.peers) == 0, minAcked: math.MaxUint64, synced: true}
	for _, p := range s.peers {
		v.minAcked = min(v.minAcked, p.acked)
		v.synced = v.synced && p.synced
	}
	s.view.Store(v)
}

// newIncarnation records that p is now incarnation inc: if it was another,
// p restarted and must hear everything again. Called with s.mu held.
func (s *Store) newIncarnation(p *peer, inc uint64) {
	if p.inc == inc {
		return
	}
	if p.inc != 0 {
		p.acked, p.synced, p.first = 0, false, s.round.Load()
	}
	p.inc = inc
}

// slot returns the slot of the incarnation k. Called with s.mu held.
func (s *Store) slot(k slotKey) uint32 {
	id, ok := s.slots[k]
	if !ok {
		id = uint32(len(s.slots) + 1)
		s.slots[k] = id
	}
	return id
}

// exchange builds this round's message and sends it to every peer not
// still receiving the last one.
func (s *Store) exchange() {
	s.mu.Lock()
	if len(s.peers) == 0 {
		s.mu.Unlock()
		return
	}
	since := uint64(math.MaxUint64)
	var to []*peer
	for _, p := range s.peers {
		since = min(since, p.acked)
		if !p.busy {
			p.busy = true
			to = append(to, p)
		}
	}
	s.mu.Unlock()
	round := s.round.Add(1) - 1
	msg := s.build(round, since)
	s.stats.rounds.Add(1)
	for _, p := range to {
		node := p.node
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			err := s.ml.SendReliable(&node, msg)
			if err != nil {
				s.stats.sendErrors.Add(1)
			} else {
				s.stats.bytes.Add(uint64(len(msg)))
			}
			s.mu.Lock()
			p.busy = false
			s.mu.Unlock()
		}()
	}
}

// build encodes round's message: every key this instance changed since
// round since, as it stands now.
func (s *Store) build(round, since uint64) []byte {
	v := s.view.Load()
	var body []byte
	n := 0
	for i := range s.tab.shards {
		sh := &s.tab.shards[i]
		sh.mu.Lock()
		for k, e := range sh.keys {
			if e.changed <= since || len(k) > maxKeyLen { // (only the overflow counter of a rule named so long)
				continue
			}
			e.toldState(v) // keep what the peers acknowledged before sent moves on
			e.sent, e.sentRound = e.local, round
			body = appendRecord(body, k, &e.limit, e.local)
			n++
		}
		sh.mu.Unlock()
	}
	msg := appendCountsHeader(make([]byte, 0, 64+len(body)), countsHeader{name: s.name, incarnation: s.incarnation, round: round, since: since}, n)
	return append(msg, body...)
}

// receiveCounts applies another instance's counts and acknowledges them.
func (s *Store) receiveCounts(b []byte) {
	var recs []record
	h, err := readCounts(b, func(r record) { recs = append(recs, r) })
	if err != nil || h.name == s.name || h.incarnation == 0 {
		return
	}
	k := slotKey{h.name, h.incarnation}
	s.mu.Lock()
	slot := s.slot(k)
	// complete: with this message, every count the sender had at h.round
	// is here (it carries every change since h.since, and every count up
	// to h.since was here already).
	complete := h.since == 0 || h.since <= s.heard[k]
	p := s.peers[h.name]
	if p != nil {
		s.newIncarnation(p, h.incarnation)
	}
	s.mu.Unlock()
	for _, r := range recs {
		s.apply(slot, r)
	}
	s.mu.Lock()
	if complete {
		s.heard[k] = max(s.heard[k], h.round)
	}
	// An acknowledgement says "every count you had at h.round is here":
	// none to an instance that is not a member (yet, or any more), nor for
	// a message that leaves a gap, so that a sender's since never passes
	// what this instance holds.
	if p == nil || !complete {
		s.mu.Unlock()
		return
	}
	if p.inc == h.incarnation && !p.synced {
		p.synced = true
		s.setView()
	}
	node := p.node
	s.mu.Unlock()
	_ = s.ml.SendBestEffort(&node, appendAck(nil, s.name, s.incarnation, h.incarnation, h.round))
}

// apply records one key of another instance's counts.
func (s *Store) apply(slot uint32, r record) {
	sh := s.tab.shard(r.key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.keys[r.key]
	if e == nil {
		if !sh.room(s.tab.max, limiter.UnixMicro(s.clock.Now())) {
			sh.dropped++
			return
		}
		e = &entry{}
		sh.keys[r.key] = e
	}
	e.merge(slot, r.limit, r.st)
}

// receiveAck records a peer's acknowledgement of a round.
func (s *Store) receiveAck(b []byte) {
	a, err := readAck(b)
	if err != nil || a.of != s.incarnation {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.peers[a.name]
	if p == nil {
		return
	}
	s.newIncarnation(p, a.incarnation)
	if a.round >= p.first && a.round > p.acked && a.round < s.round.Load() {
		p.acked = a.round
		s.setView()
	}
}

// delegate receives the messages of the other instances.
type delegate struct{ s *Store }

func (delegate) NodeMeta(int) []byte { return nil }

func (d delegate) NotifyMsg(b []byte) {
	if len(b) == 0 || d.s.closed.Load() {
		return
	}
	switch b[0] {
	case kindCounts:
		d.s.receiveCounts(b[1:])
	case kindAck:
		d.s.receiveAck(b[1:])
	}
}

func (delegate) GetBroadcasts(int, int) [][]byte { return nil }
func (delegate) LocalState(bool) []byte          { return nil }
func (delegate) MergeRemoteState([]byte, bool)   {}

// events follows the membership. memberlist calls it with its own locks
// held: it only updates the store's peers.
type events struct{ s *Store }

func (e events) NotifyJoin(n *memberlist.Node) {
	s := e.s
	if n.Name == s.name {
		return
	}
	s.mu.Lock()
	s.peers[n.Name] = &peer{node: *n, first: s.round.Load()}
	s.setView()
	s.mu.Unlock()
}

func (e events) NotifyLeave(n *memberlist.Node) {
	s := e.s
	s.mu.Lock()
	delete(s.peers, n.Name)
	s.setView()
	s.mu.Unlock()
}

func (e events) NotifyUpdate(n *memberlist.Node) {
	s := e.s
	s.mu.Lock()
	if p := s.peers[n.Name]; p != nil {
		p.node = *n
	}
	s.mu.Unlock()
}

// newLogger turns memberlist's log lines into records of l: warnings and
// errors as warnings, the rest at debug level.
func newLogger(l *slog.Logger) *log.Logger {
	return log.New(logWriter{l}, "", 0)
}

type logWriter struct{ l *slog.Logger }

func (w logWriter) Write(b []byte) (int, error) {
	line := string(bytes.TrimSpace(b))
	level := slog.LevelDebug
	if bytes.Contains(b, []byte("[WARN]")) || bytes.Contains(b, []byte("[ERR]")) {
		level = slog.LevelWarn
	}
	w.l.Log(context.Background(), level, "gossip: "+line)
	return len(b), nil
}
