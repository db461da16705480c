package gossip

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// Defaults of Options.
const (
	DefaultInterval      = 200 * time.Millisecond
	DefaultMaxUnsynced   = 10
	DefaultMaxKeys       = 1_000_000
	DefaultSweepInterval = 10 * time.Second
	shards               = 64
)

// Options configures a Store. Bind is required; every other field has a
// default.
type Options struct {
	// Bind is the host:port the instance gossips on, over UDP and TCP.
	Bind string
	// Join are host:port addresses of other instances, tried at start and
	// again every second while the instance has no peer (the first
	// instance of a fleet starts alone and is joined by the others). The
	// instance's own address is skipped.
	Join []string
	// Interval is how often the instance tells the others what it counted.
	// Zero or less means DefaultInterval (200ms).
	Interval time.Duration
	// MaxUnsynced is the most one instance admits for a key beyond what
	// every other instance has acknowledged hearing (one request more when
	// a single request costs more). Zero or less means DefaultMaxUnsynced.
	MaxUnsynced int64
	// Key encrypts and authenticates the gossip (AES-GCM): 16, 24 or 32
	// bytes, the same on every instance. Nil: the gossip is in the clear.
	Key []byte
	// Name is the instance's member name, unique in the fleet. Default:
	// Bind, or the host name and Bind's port when Bind's host is
	// unspecified (0.0.0.0, [::]).
	Name string
	// MaxKeys is the most keys the store holds, its own and those the
	// others tell it of. Zero or less means DefaultMaxKeys (1,000,000).
	MaxKeys int
	// Clock drives the sweep of expired keys; decisions take the time as
	// an argument, which should come from the same clock. Nil means
	// clock.Real{}.
	Clock clock.Clock
	// SweepInterval is how often expired keys are removed. Zero or less
	// means DefaultSweepInterval (10s).
	SweepInterval time.Duration
	// Logger receives the membership's warnings (and its debug lines at
	// debug level). Nil discards them.
	Logger *slog.Logger

	// tune, in tests, adjusts the membership's timers.
	tune func(*memberlist.Config)
}

// Store is the gossip store. See the package documentation.
type Store struct {
	tab         *table
	ml          *memberlist.Memberlist
	name        string
	addr        string // host:port it gossips on, read once at start
	incarnation uint64
	interval    time.Duration
	maxUnsynced int64
	join        []string
	clock       clock.Clock
	logger      *slog.Logger

	round atomic.Uint64        // the round the next message will be
	view  atomic.Pointer[view] // what the peers acknowledged, for Decide

	mu    sync.Mutex
	peers map[string]*peer
	slots map[slotKey]uint32
	// heard is, per incarnation of another instance, the last round of it
	// by which this instance holds every count it had: kept when the
	// instance leaves the membership, so that one given up for dead (a
	// partition, a stopped process) that comes back with the same
	// incarnation, and goes on sending what changed since the round this
	// one last acknowledged, is in sync again at its next message.
	heard map[slotKey]uint64

	// afterClosedCheck, set by tests only, runs in Decide and DecideAll
	// once the closed flag is read: a Close may begin there.
	afterClosedCheck func()
	// label marks the goroutines of this instance's membership; linger
	// bounds how long they outlive its Shutdown (waitMembership).
	label  string
	linger time.Duration

	stats     stats
	stop      chan struct{}
	wg        sync.WaitGroup // the loop and the sends
	closed    atomic.Bool
	closeOnce sync.Once
}

var _ store.Store = (*Store)(nil)

// stats are the store's counters (Stats).
type stats struct {
	rounds, sendErrors, unsynced, bytes atomic.Uint64
}

// Stats are the gossip store's counters since it opened.
type Stats struct {
	Keys       int    // keys held now
	Dropped    uint64 // keys others told of that found no room (MaxKeys)
	Rounds     uint64 // messages built, one per Interval while there are peers
	Bytes      uint64 // bytes sent in counts messages, over every peer
	SendErrors uint64 // counts messages a peer could not be sent
	Unsynced   uint64 // requests refused to wait for the next exchange (MaxUnsynced)
}

// New starts an instance: it binds opts.Bind, tries to join opts.Join and
// starts exchanging counts. Close stops it.
func New(opts Options) (*Store, error) {
	host, port, err := splitBind(opts.Bind)
	if err != nil {
		return nil, err
	}
	if err := checkKey(opts.Key); err != nil {
		return nil, err
	}
	s := &Store{interval: opts.Interval, maxUnsynced: opts.MaxUnsynced, clock: opts.Clock, logger: opts.Logger,
		peers: map[string]*peer{}, slots: map[slotKey]uint32{}, heard: map[slotKey]uint64{}, stop: make(chan struct{})}
	if s.interval <= 0 {
		s.interval = DefaultInterval
	}
	if s.maxUnsynced <= 0 {
		s.maxUnsynced = DefaultMaxUnsynced
	}
	if s.clock == nil {
		s.clock = clock.Real{}
	}
	if s.logger == nil {
		s.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	maxKeys := opts.MaxKeys
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	s.tab = newTable(maxKeys, shards)
	s.name = opts.Name
	var inc [8]byte
	_, _ = rand.Read(inc[:])
	if s.name == "" {
		s.name = defaultName(host, port)
		if port == 0 { // the port is chosen at bind: tell instances apart by a random suffix
			s.name += "-" + strconv.FormatUint(binary.LittleEndian.Uint64(inc[:])&0xffff, 16)
		}
	}
	if len(s.name) > maxKeyLen {
		return nil, fmt.Errorf("gossip store: name of %d bytes (at most %d)", len(s.name), maxKeyLen)
	}
	s.incarnation = binary.LittleEndian.Uint64(inc[:]) | 1 // never 0: 0 is "not heard yet"
	s.round.Store(1)
	s.view.Store(&view{alone: true})
	for _, j := range opts.Join {
		if j != opts.Bind {
			s.join = append(s.join, j)
		}
	}
	if err := s.startMembership(host, port, opts); err != nil {
		return nil, err
	}
	sweep := opts.SweepInterval
	if sweep <= 0 {
		sweep = DefaultSweepInterval
	}
	s.wg.Add(1)
	go s.loop(sweep)
	return s, nil
}

// startMembership creates the memberlist and tries the join addresses once.
func (s *Store) startMembership(host string, port int, opts Options) error {
	c := memberlist.DefaultLANConfig()
	c.Name, c.BindAddr, c.BindPort, c.AdvertisePort = s.name, host, port, port
	c.SecretKey = opts.Key
	c.Delegate, c.Events = delegate{s}, events{s}
	c.Logger = newLogger(s.logger)
	c.TCPTimeout = min(max(5*s.interval, time.Second), 10*time.Second)
	if opts.tune != nil {
		opts.tune(c)
	}
	s.label = strconv.FormatUint(stores.Add(1), 10)
	s.linger = time.Duration(c.AwarenessMaxMultiplier)*c.ProbeInterval + c.TCPTimeout
	var ml *memberlist.Memberlist
	var err error
	// Every goroutine memberlist starts descends from Create's and so
	// carries its label, by which Close knows when they have ended.
	pprof.Do(context.Background(), pprof.Labels(labelKey, s.label), func(context.Context) {
		ml, err = memberlist.Create(c)
	})
	if err != nil {
		return fmt.Errorf("gossip store: listen on %s: %w", net.JoinHostPort(host, strconv.Itoa(port)), err)
	}
	s.ml = ml
	s.addr = ml.LocalNode().Address() // before any other member is heard of: nothing rewrites it yet
	s.tryJoin()
	return nil
}

// tryJoin joins the join addresses if the instance has no peer yet.
func (s *Store) tryJoin() {
	if len(s.join) == 0 || s.ml.NumMembers() > 1 {
		return
	}
	if _, err := s.ml.Join(s.join); err != nil {
		s.logger.Debug("gossip store: no instance to join yet", "join", s.join, "err", err.Error())
	}
}

// Addr returns the address the instance gossips on (with the port chosen
// when Bind's port is 0).
func (s *Store) Addr() string { return s.addr }

// Name returns the instance's member name.
func (s *Store) Name() string { return s.name }

// Decide decides a request of cost on key under l at now, from this
// instance's count and the others' last told counts: see the package
// documentation. A limit of an algorithm other than fixed_window or
// sliding_window is an error.
func (s *Store) Decide(_ context.Context, key store.Key, l limiter.Limit, now time.Time, cost int64) (limiter.Decision, error) {
	d, _, err := s.decideOne(key, l, now, cost)
	return d, err
}

// decideOne is Decide, reporting whether the decision was made on the
// overflow counter of key's rule (store.Result.Shared).
func (s *Store) decideOne(key store.Key, l limiter.Limit, now time.Time, cost int64) (d limiter.Decision, shared bool, err error) {
	if s.closed.Load() {
		return limiter.Decision{}, false, store.ErrClosed
	}
	if s.afterClosedCheck != nil {
		s.afterClosedCheck()
	}
	if l.IsZero() || cost < 0 {
		d, _ := limiter.Decide(l, limiter.State{}, now, cost)
		return d, false, nil
	}
	if !Supported(l.Algorithm()) {
		return limiter.Decision{}, false, unsupported(l)
	}
	return s.decide(key.String(), key.Rule(), l, now, cost, false)
}

// unsupported is the error of a decision under l, whose algorithm the
// store does not keep.
func unsupported(l limiter.Limit) error {
	return fmt.Errorf("gossip store: %v is not kept by gossip (%s)", l.Algorithm(), SupportedNames)
}

// DecideEach decides each request in turn, as Decide, appending the
// results to dst; a decision on a rule's overflow counter is Shared.
func (s *Store) DecideEach(_ context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	if s.closed.Load() {
		return dst, store.ErrClosed
	}
	for _, r := range reqs {
		var res store.Result
		res.Decision, res.Shared, res.Err = s.decideOne(r.Key, r.Limit, now, r.Cost)
		dst = append(dst, res)
	}
	return dst, nil
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	keys, dropped := s.tab.size()
	return Stats{Keys: keys, Dropped: dropped, Rounds: s.stats.rounds.Load(), Bytes: s.stats.bytes.Load(),
		SendErrors: s.stats.sendErrors.Load(), Unsynced: s.stats.unsynced.Load()}
}

// Close stops admitting, tells the peers what it admitted that they have
// not acknowledged (flush, for up to four intervals), leaves the fleet
// (the others keep this instance's counts until their windows end), stops
// the exchange and the sweep, closes the sockets
// and returns once every goroutine the store started has ended: a probe
// of a member that stopped answering ends when its probe interval does,
// up to 8 ProbeIntervals and a TCPTimeout (9s at the defaults).
func (s *Store) Close() error {
	err := store.ErrClosed
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		close(s.stop)
		s.wg.Wait() // the loop and the messages on their way
		s.flush(flushWait(s.interval))
		err = s.ml.Leave(time.Second)
		s.wg.Wait()
		if e := s.ml.Shutdown(); e != nil && err == nil {
			err = e
		}
		if e := s.waitMembership(); e != nil && err == nil {
			err = e
		}
		if err != nil {
			err = fmt.Errorf("gossip store: close: %w", err)
		}
	})
	return err
}

// flushWait is how long Close waits for the peers to acknowledge this
// instance's last counts: four intervals, at least half a second and at
// most five seconds.
func flushWait(interval time.Duration) time.Duration {
	return min(max(4*interval, 500*time.Millisecond), 5*time.Second)
}

// flush tells the peers, before this instance leaves, what it admitted
// that they have not acknowledged (up to MaxUnsynced a key), so that an
// instance stopped on purpose (a rolling deploy, a scale-in) leaves its
// admissions counted by every peer, not only up to what they last heard:
// it sends a message every few milliseconds until every peer acknowledged
// one built after the last admission (the store is closed: there is none
// after), for at most wait. A peer that does not answer in time is left
// with what it has, as when an instance dies.
func (s *Store) flush(wait time.Duration) {
	last := s.round.Load() // the next message is built after the last admission
	deadline := time.Now().Add(wait)
	for {
		if v := s.view.Load(); v.alone || v.minAcked >= last {
			return
		}
		if time.Now().After(deadline) {
			s.logger.Warn("gossip store: left before every peer acknowledged its last counts", "waited", wait)
			return
		}
		s.exchange() // to each peer not still receiving the last message
		time.Sleep(5 * time.Millisecond)
	}
}

// labelKey is the goroutine label of a store's membership (runtime/pprof).
const labelKey = "sluice_gossip_store"

// stores numbers the stores of the process, for their labels.
var stores atomic.Uint64

// waitMembership waits, after the membership's Shutdown, until none of its
// goroutines is left. memberlist's Shutdown closes the sockets and stops
// the timers but does not wait for a probe under way, which waits out its
// probe interval for an acknowledgement that can no longer arrive, nor for
// a connection being read (up to TCPTimeout). They all carry s.label.
func (s *Store) waitMembership() error {
	want := []byte(strconv.Quote(labelKey) + ":" + strconv.Quote(s.label))
	deadline := time.Now().Add(s.linger)
	var buf bytes.Buffer
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		buf.Reset()
		if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
			return err
		}
		if !bytes.Contains(buf.Bytes(), want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("membership goroutines still running %v after shutdown", s.linger)
		}
		time.Sleep(wait)
	}
}

// loop exchanges counts every interval, sweeps expired keys and retries
// joining while alone.
func (s *Store) loop(sweepEvery time.Duration) {
	defer s.wg.Done()
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	sweep := s.clock.NewTicker(sweepEvery)
	defer sweep.Stop()
	lastJoin := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			s.exchange()
			if time.Since(lastJoin) >= time.Second {
				lastJoin = time.Now()
				s.tryJoin()
			}
		case <-sweep.C():
			s.tab.sweep(limiter.UnixMicro(s.clock.Now()))
		}
	}
}

// splitBind parses Bind.
func splitBind(bind string) (string, int, error) {
	host, p, err := net.SplitHostPort(bind)
	if err != nil {
		return "", 0, fmt.Errorf("gossip store: bind %q: %w (want host:port)", bind, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("gossip store: bind %q: port %q is not 0 to 65535", bind, p)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return host, port, nil
}

// checkKey checks the length of an encryption key.
func checkKey(k []byte) error {
	switch len(k) {
	case 0, 16, 24, 32:
		return nil
	}
	return fmt.Errorf("gossip store: key of %d bytes (want 16, 24 or 32)", len(k))
}

// defaultName is Options.Name's default.
func defaultName(host string, port int) string {
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil && h != "" {
			host = h
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// Member is an instance of the fleet as this one sees it.
type Member struct {
	Name  string `json:"name"`
	Addr  string `json:"addr"`  // host:port it gossips on
	State string `json:"state"` // alive: memberlist tells no suspicion, so a suspect member is listed alive until it is declared dead; dead and departed members are not listed
	Self  bool   `json:"self,omitempty"`
}

// Members returns the instances this one knows to be in the fleet, itself
// first, then by name. It reads the copies the store keeps of the peers,
// made as memberlist told it of them (under memberlist's locks), never
// memberlist's own nodes, which it rewrites while it learns of them.
func (s *Store) Members() []Member {
	s.mu.Lock()
	out := make([]Member, 0, len(s.peers)+1)
	out = append(out, Member{Name: s.name, Addr: s.addr, State: "alive", Self: true})
	for _, p := range s.peers {
		out = append(out, Member{Name: p.node.Name, Addr: p.node.Address(), State: stateName(p.node.State)})
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Member) int {
		if a.Self != b.Self {
			if a.Self {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

func stateName(st memberlist.NodeStateType) string {
	switch st {
	case memberlist.StateAlive:
		return "alive"
	case memberlist.StateSuspect:
		return "suspect"
	case memberlist.StateDead:
		return "dead"
	}
	return "left"
}

// State is "shared" while the instance has peers, "alone" while it has
// none (its counts are then the fleet's, as it knows it).
func (s *Store) State() string {
	if s.view.Load().alone {
		return "alone"
	}
	return "shared"
}

// Interval returns how often the instance tells the others its counts.
func (s *Store) Interval() time.Duration { return s.interval }

// MaxUnsynced returns the most the instance admits for a key beyond what
// the others acknowledged.
func (s *Store) MaxUnsynced() int64 { return s.maxUnsynced }
