package redis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// Defaults of Options.
const (
	// DefaultTimeout is the deadline of each store operation.
	DefaultTimeout = 50 * time.Millisecond
	// DefaultPrefix starts every key the store writes.
	DefaultPrefix = "sluice:"
)

// connectTimeout bounds New when its context has no deadline.
const connectTimeout = 5 * time.Second

// Options configures a Store. The zero value of every field but Addrs is a
// working default.
type Options struct {
	// Addrs are the Redis addresses, "host:port". One address is a
	// standalone server, or any node of a cluster (it is detected); several
	// are seed nodes of a Redis Cluster. Required.
	Addrs []string
	// Username and Password authenticate with AUTH; empty: none.
	Username string
	Password string
	// TLS, if not nil, makes every connection use TLS with this config.
	TLS *tls.Config
	// Timeout is the deadline of each store operation (a Decide or a
	// DecideEach), applied on top of the caller's context. Default 50ms.
	Timeout time.Duration
	// Prefix starts every Redis key the store writes. It must not contain
	// '{' or '}', which would break the keys' hash tags. Default "sluice:".
	Prefix string
	// CallerTime makes the scripts use the now passed to Decide instead of
	// Redis TIME, and leaves keys without a TTL. It is for tests that replay
	// time-step tables on a fake clock; instances sharing a Redis must use
	// Redis TIME (the default, false), their one time authority.
	CallerTime bool
	// Lazy makes New return at once, without connecting, so that a program
	// can start while Redis is down. The store connects on first use (or
	// Connect), and tries again at most once a second (on Clock) while
	// Redis does not answer; each try is bounded by 500ms. Until it has
	// connected, calls fail at once with an error matching
	// ErrNotConnected, except the one that makes a try, which waits for
	// it. Default false: New connects before it returns.
	Lazy bool
	// Clock times a lazy store's tries to connect and the sweeps that end
	// quota grants. Decisions never read it: they use Redis TIME, and
	// grants the now of decisions. Default clock.Real{}.
	Clock clock.Clock
	// Grant configures quota grants (grant.go): a hot key's units taken
	// GrantOptions.Max at a time and admitted here. The zero value grants
	// nothing: one script call per decision (or per batch of a hot key's
	// concurrent decisions).
	Grant GrantOptions
}

// Store is a store.Store on Redis or Redis Cluster. It is safe for
// concurrent use; rueidis pipelines concurrent calls on shared connections.
type Store struct {
	// client is set once: by New and NewFromClient, or by a lazy store's
	// first successful try (lazy.go), which then sets ready. Read it only
	// when ready.
	client     rueidis.Client
	ready      atomic.Bool
	lazy       *lazy // nil unless Options.Lazy
	ownsClient bool  // New made the client, so Close closes it
	timeout    time.Duration
	prefix     string
	callerTime bool
	closed     atomic.Bool

	mu      sync.Mutex               // guards flights, and orders Close against wg.Add
	flights map[string]*flight       // keys with a call in flight (coalesce.go)
	slots   map[slotGroup]*slotQueue // slot groups with a call in flight (keys.go)
	wg      sync.WaitGroup           // batch calls in flight
	feed    resetFeed                // the reset channel (reset.go)

	grants     *grantTable // nil without quota grants (grant.go)
	clock      clock.Clock
	stopSweeps context.CancelFunc // ends the grants' sweeper; nil without grants
	sweepsDone chan struct{}
}

var _ store.Store = (*Store)(nil)

// New connects to Redis as opts say and returns a Store. It fails if no
// address answers, or if ctx ends first (without a deadline in ctx,
// connecting is bounded by 5 seconds). The scripts are loaded on every
// node; a node that loses them later (a restart, SCRIPT FLUSH) gets them
// again on first use. With Options.Lazy, New only checks opts and returns
// at once; the store connects when used.
func New(ctx context.Context, opts Options) (*Store, error) {
	if len(opts.Addrs) == 0 {
		return nil, errors.New("redis store: no address (Options.Addrs is empty)")
	}
	s, err := newStore(nil, true, opts)
	if err != nil {
		return nil, err
	}
	if opts.Lazy {
		s.lazy = newLazy(opts)
		return s, nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, connectTimeout)
		defer cancel()
	}
	if s.client, err = dial(ctx, opts); err != nil {
		return nil, err
	}
	s.ready.Store(true)
	return s, nil
}

// dial connects to Redis as opts say, within ctx (which has a deadline),
// and loads the scripts.
func dial(ctx context.Context, opts Options) (rueidis.Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("redis store: connect: %w", err)
	}
	dl, _ := ctx.Deadline()
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:  opts.Addrs,
		Username:     opts.Username,
		Password:     opts.Password,
		TLSConfig:    opts.TLS,
		Dialer:       net.Dialer{Timeout: time.Until(dl)},
		DisableCache: true, // no client-side caching: every decision is a script
	})
	if err != nil {
		return nil, fmt.Errorf("redis store: connect to %s: %w", strings.Join(opts.Addrs, ","), err)
	}
	if err := sendScripts(ctx, client); err != nil {
		client.Close()
		return nil, err
	}
	return client, nil
}

// NewFromClient returns a Store that uses client, a rueidis client the
// caller made and keeps owning: Close does not close it. opts.Addrs,
// Username, Password and TLS are ignored.
func NewFromClient(client rueidis.Client, opts Options) (*Store, error) {
	if client == nil {
		return nil, errors.New("redis store: nil client")
	}
	return newStore(client, false, opts)
}

// newStore checks opts and returns a Store on client with the defaults
// filled in.
func newStore(client rueidis.Client, owns bool, opts Options) (*Store, error) {
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("redis store: negative timeout %v", opts.Timeout)
	}
	if strings.ContainsAny(opts.Prefix, "{}") {
		return nil, fmt.Errorf("redis store: prefix %q contains '{' or '}' (they would break the keys' cluster hash tags)", opts.Prefix)
	}
	if g := opts.Grant; g.Max < 0 || g.Max > 0 && g.TTL != 0 && (g.TTL < MinGrantTTL || g.TTL > MaxGrantTTL) {
		return nil, fmt.Errorf("redis store: grant of %d units for %v (Max 0 or more, TTL %v to %v)", g.Max, g.TTL, MinGrantTTL, MaxGrantTTL)
	}
	s := &Store{client: client, ownsClient: owns, timeout: opts.Timeout, prefix: opts.Prefix, callerTime: opts.CallerTime,
		flights: make(map[string]*flight), slots: make(map[slotGroup]*slotQueue), clock: opts.Clock}
	if s.clock == nil {
		s.clock = clock.Real{}
	}
	s.ready.Store(client != nil)
	if opts.Grant.Max > 0 {
		s.grants = newGrantTable(opts.Grant)
		ctx, cancel := context.WithCancel(context.Background())
		s.stopSweeps, s.sweepsDone = cancel, make(chan struct{})
		go s.sweepLoop(ctx, s.sweepsDone)
	}
	if s.timeout == 0 {
		s.timeout = DefaultTimeout
	}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	return s, nil
}

// sendScripts loads every script on every node of client, so that the
// first decisions need no EVAL fallback.
func sendScripts(ctx context.Context, client rueidis.Client) error {
	all := []*script{multiScript}
	for _, alg := range limiter.Algorithms {
		all = append(all, scripts[alg])
		if b := scripts[alg].batch; b != nil {
			all = append(all, b)
		}
		all = append(all, keysScripts[scripts[alg]])
		if g := grantScripts[alg]; g != nil {
			all = append(all, g, returnScripts[alg])
		}
	}
	for addr, node := range client.Nodes() {
		cmds := make(rueidis.Commands, 0, len(all))
		for _, sc := range all {
			cmds = append(cmds, node.B().ScriptLoad().Script(sc.src).Build())
		}
		for i, res := range node.DoMulti(ctx, cmds...) {
			if err := res.Error(); err != nil {
				return fmt.Errorf("redis store: load script %s on %s: %w", all[i].name, addr, err)
			}
		}
	}
	return nil
}

// Decide applies a request of cost to key under limit, atomically in
// Redis, and returns the decision. now is used only with
// Options.CallerTime; otherwise the time is Redis TIME. The zero Limit and
// a negative cost are denied without asking Redis, as limiter.Decide does.
func (s *Store) Decide(ctx context.Context, key store.Key, limit limiter.Limit, now time.Time, cost int64) (limiter.Decision, error) {
	if s.closed.Load() {
		return limiter.Decision{}, store.ErrClosed
	}
	if limit.IsZero() || cost < 0 {
		return limiter.Decision{Limit: limit.Burst(), RetryAfter: limiter.Never}, nil
	}
	if s.grants != nil {
		res, err := s.grantBatch(ctx, []store.Request{{Key: key, Limit: limit, Cost: cost}}, now)
		if err != nil {
			return limiter.Decision{}, err
		}
		return res[0].Decision, res[0].Err
	}
	if err := s.Connect(ctx); err != nil {
		return limiter.Decision{}, err
	}
	return s.coalesce(ctx, s.newCall(key, limit, cost, now))
}

// decideOne decides c in a call of its own, under ctx and Options.Timeout.
func (s *Store) decideOne(ctx context.Context, c call) (limiter.Decision, error) {
	tctx, cancel := s.withTimeout(ctx)
	defer cancel()
	d, err := s.eval(tctx, c)
	if err != nil {
		return limiter.Decision{}, s.failed(ctx, c.sc, err)
	}
	return d, nil
}

// eval runs c's script under tctx and reads its decision.
func (s *Store) eval(tctx context.Context, c call) (limiter.Decision, error) {
	return parseReply(s.evalScript(tctx, c.sc, []string{c.key}, c.req), c.burst)
}

// evalScript runs sc on keys with args under tctx, by its SHA-1, and
// again with the script itself if the node has lost its scripts (a
// restart, SCRIPT FLUSH).
func (s *Store) evalScript(tctx context.Context, sc *script, keys []string, args ...string) rueidis.RedisResult {
	res := s.client.Do(tctx, sc.command(s.client.B(), true, keys, args...))
	if isNoScript(res.Error()) {
		res = s.client.Do(tctx, sc.command(s.client.B(), false, keys, args...))
	}
	return res
}

// newCall returns the script call deciding a request.
func (s *Store) newCall(key store.Key, l limiter.Limit, cost int64, now time.Time) call {
	t := int64(useRedisTime)
	if s.callerTime {
		t = limiter.UnixMicro(now)
	}
	return newCall(l, redisKey(s.prefix, key), cost, t)
}

// withTimeout returns ctx bounded by Options.Timeout and what releases it.
// A deadline of the caller's that comes first bounds it already: then ctx
// is used as it is, which spares a timer per call.
func (s *Store) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= s.timeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.timeout)
}

// failed wraps an error of script sc, for a caller whose context is
// caller. A store closed meanwhile reports store.ErrClosed. If the caller
// has gone (its context is canceled), the error matches context.Canceled,
// whatever else it is (such as the timeout, when Redis did not notice the
// cancellation), so that it is not taken for a failure of Redis.
func (s *Store) failed(caller context.Context, sc *script, err error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if errors.Is(caller.Err(), context.Canceled) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("redis store: eval %s: %w (caller gone: %w)", sc.name, err, context.Canceled)
	}
	return fmt.Errorf("redis store: eval %s: %w", sc.name, err)
}

// Close marks the store closed and, if New made its client, closes the
// client. Decisions after Close return store.ErrClosed. Closing twice does
// nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	already := s.closed.Swap(true)
	s.mu.Unlock()
	if already {
		return nil
	}
	if s.grants != nil { // the grants end, their unused units going back, before the client closes
		s.stopSweeps()
		<-s.sweepsDone
		s.grants.mu.Lock()
		s.grants.closing = true
		s.grants.mu.Unlock()
		s.grants.flights.Wait() // grant calls in flight land (within Options.Timeout) before their units go back
		s.sweepGrants(s.clock.Now(), true)
	}
	s.feed.close()     // before the client: the watcher uses it
	if s.lazy != nil { // a try in progress ends first (it sets the client, or not)
		s.lazy.mu.Lock()
		defer s.lazy.mu.Unlock()
	}
	if s.ownsClient && s.ready.Load() {
		s.client.Close()
	}
	s.wg.Wait() // batch calls end with the client, or within Options.Timeout
	return nil
}
