package store

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/clock"
)

// Renewer holds the leases of one instance's requests in flight and renews
// them all in one Leaser.Renew call per interval, from one goroutine ticking
// on its clock: a long request keeps its slots, and no goroutine or timer is
// started per request. Close stops it; the leases it held then expire
// within their TTL unless released, which is what happens to a dead
// instance's leases.
//
// The interval must leave a lease time for a missed or failed renewal: at
// most a third of the shortest TTL of the leases held (Every's default is a
// third of DefaultLeaseTTL). A lease that Renew reports lost (it expired
// before it was renewed, so its slots may have gone to another request) is
// dropped from the set; its request goes on, and its Release does nothing.
type Renewer struct {
	leaser  Leaser
	onRenew func(RenewReport)

	mu     sync.Mutex
	held   map[Lease]struct{}
	closed bool

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// RenewerOptions configures a Renewer. The zero value of each field is its
// default.
type RenewerOptions struct {
	// Clock ticks the renewals and gives their now. Default clock.Real{}.
	Clock clock.Clock
	// Every is the interval between renewals. Default DefaultLeaseTTL/3.
	Every time.Duration
	// OnRenew, if set, is called after each renewal with what it did (for
	// metrics and tests), from the renewing goroutine.
	OnRenew func(RenewReport)
}

// RenewReport is what one renewal did.
type RenewReport struct {
	Renewed int   // leases renewed
	Lost    int   // leases found expired or released, dropped from the set
	Err     error // the store's error: no lease was renewed, all are kept for the next try
}

// NewRenewer returns a Renewer of leases acquired from l and starts its
// goroutine; Close stops it.
func NewRenewer(l Leaser, opts RenewerOptions) *Renewer {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Every <= 0 {
		opts.Every = DefaultLeaseTTL / 3
	}
	r := &Renewer{leaser: l, onRenew: opts.OnRenew, held: make(map[Lease]struct{}),
		stop: make(chan struct{}), done: make(chan struct{})}
	go r.loop(opts.Clock.NewTicker(opts.Every)) // made here: a tick after NewRenewer returns is never missed
	return r
}

// ErrRenewerClosed is Acquire's error after the Renewer's Close.
var ErrRenewerClosed = errors.New("store: lease renewer closed")

// Acquire acquires a lease as the Leaser does and, when one is granted,
// holds it for renewal until Release.
func (r *Renewer) Acquire(ctx context.Context, key Key, limit Concurrency, now time.Time, cost int64) (LeaseDecision, error) {
	d, err := r.leaser.Acquire(ctx, key, limit, now, cost)
	if err != nil || d.Lease.IsZero() {
		return d, err
	}
	r.mu.Lock()
	closed := r.closed
	if !closed {
		r.held[d.Lease] = struct{}{}
	}
	r.mu.Unlock()
	if closed { // nobody would renew it: give it back
		_ = r.leaser.Release(ctx, d.Lease, now)
		return LeaseDecision{}, ErrRenewerClosed
	}
	return d, nil
}

// Release stops renewing lease and releases it as the Leaser does.
func (r *Renewer) Release(ctx context.Context, lease Lease, now time.Time) error {
	if lease.IsZero() {
		return nil
	}
	r.mu.Lock()
	delete(r.held, lease)
	r.mu.Unlock()
	return r.leaser.Release(ctx, lease, now)
}

var _ Leaser = (*Renewer)(nil)

// Renew renews leases as the Leaser does, so that a Renewer serves where a
// Leaser is asked for; it renews the leases it holds by itself.
func (r *Renewer) Renew(ctx context.Context, leases []Lease, now time.Time) ([]bool, error) {
	return r.leaser.Renew(ctx, leases, now)
}

// Held returns how many leases the Renewer is holding.
func (r *Renewer) Held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.held)
}

// Close stops the renewals and waits for one in progress; it releases
// nothing. It is idempotent and returns nil.
func (r *Renewer) Close() error {
	r.once.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		close(r.stop)
		<-r.done
	})
	return nil
}

// loop renews at every tick until Close.
func (r *Renewer) loop(ticker clock.Ticker) {
	defer close(r.done)
	defer ticker.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-ticker.C():
			rep := r.renew(now)
			if r.onRenew != nil {
				r.onRenew(rep)
			}
		}
	}
}

// renew renews every lease held at now in one call and drops those lost.
// The call is bounded by the store's own timeout; Close does not cut it
// short, but waits for it.
func (r *Renewer) renew(now time.Time) RenewReport {
	r.mu.Lock()
	leases := make([]Lease, 0, len(r.held))
	for l := range r.held {
		leases = append(leases, l)
	}
	r.mu.Unlock()
	if len(leases) == 0 {
		return RenewReport{}
	}
	kept, err := r.leaser.Renew(context.Background(), leases, now)
	if err != nil {
		return RenewReport{Err: err}
	}
	var rep RenewReport
	r.mu.Lock()
	for i, l := range leases {
		if i < len(kept) && kept[i] {
			rep.Renewed++
			continue
		}
		rep.Lost++
		delete(r.held, l) // released meanwhile, or lost: nothing to renew
	}
	r.mu.Unlock()
	return rep
}
