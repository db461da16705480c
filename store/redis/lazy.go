package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/store"
)

// ErrNotConnected is matched by the errors of a lazy store's calls made
// before it has connected to Redis (Options.Lazy).
var ErrNotConnected = errors.New("redis store: not connected")

const (
	// redialEvery is the least time between a lazy store's tries.
	redialEvery = time.Second
	// lazyDialTimeout bounds one try, made in a caller's call.
	lazyDialTimeout = 500 * time.Millisecond
)

// lazy is what a lazy store needs to connect later.
type lazy struct {
	opts  Options
	clock clock.Clock
	mu    sync.Mutex // held by a try; Close waits for it
	next  time.Time  // no try before
	err   error      // the last try's failure
}

func newLazy(opts Options) *lazy {
	z := &lazy{opts: opts, clock: opts.Clock}
	if z.clock == nil {
		z.clock = clock.Real{}
	}
	return z
}

// Connect connects a lazy store to Redis now, unless it has connected
// already (then it returns nil at once) or tried less than a second ago
// (then it returns the last try's failure at once, matching
// ErrNotConnected). A try is bounded by ctx and by 500ms. While another
// call is trying, Connect does not wait: it fails at once. A store made
// without Options.Lazy is connected from New on.
func (s *Store) Connect(ctx context.Context) error {
	if s.ready.Load() {
		return nil
	}
	z := s.lazy
	if !z.mu.TryLock() {
		return fmt.Errorf("%w to %s (connecting)", ErrNotConnected, strings.Join(z.opts.Addrs, ","))
	}
	defer z.mu.Unlock()
	switch now := z.clock.Now(); {
	case s.closed.Load():
		return store.ErrClosed
	case s.ready.Load():
		return nil
	case now.Before(z.next):
		return fmt.Errorf("%w (next try in %v): %w", ErrNotConnected, z.next.Sub(now).Round(time.Millisecond), z.err)
	default:
		z.next = now.Add(redialEvery)
	}
	dctx, cancel := context.WithTimeout(ctx, lazyDialTimeout)
	defer cancel()
	client, err := dial(dctx, z.opts)
	if err != nil {
		z.err = err
		return fmt.Errorf("%w: %w", ErrNotConnected, err)
	}
	s.client = client
	s.ready.Store(true)
	return nil
}
