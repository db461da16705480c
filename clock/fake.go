package clock

import (
	"sync"
	"time"
)

// Fake is a clock that moves only when told to. Its tickers tick when
// Advance passes their next tick (at most one pending tick each, like
// time.Ticker). It is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*fakeTicker
}

var _ Clock = (*Fake)(nil)

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Set moves the clock to t, backwards too (tickers fire only forwards).
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = t
	f.fire()
}

// Advance moves the clock d forward (or back, if d < 0).
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	f.fire()
}

// NewTicker returns a ticker driven by Advance and Set.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTicker{clock: f, every: d, next: f.now.Add(d), c: make(chan time.Time, 1)}
	f.tickers = append(f.tickers, t)
	return t
}

func (f *Fake) fire() {
	for _, t := range f.tickers {
		if f.now.Before(t.next) {
			continue
		}
		select {
		case t.c <- f.now:
		default: // a tick is pending: drop this one, as time.Ticker does
		}
		missed := f.now.Sub(t.next)/t.every + 1 // a jump of many periods: one step
		t.next = t.next.Add(missed * t.every)
	}
}

type fakeTicker struct {
	clock *Fake
	every time.Duration
	next  time.Time
	c     chan time.Time
}

func (t *fakeTicker) C() <-chan time.Time { return t.c }

func (t *fakeTicker) Stop() {
	f := t.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.tickers {
		if x == t {
			f.tickers = append(f.tickers[:i], f.tickers[i+1:]...)
			return
		}
	}
}
