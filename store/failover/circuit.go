package failover

import (
	"context"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// probeLimit is what Probe asks about: a look (cost 0) at a key of its own,
// which writes nothing.
var probeLimit = limiter.MustNew(limiter.FixedWindow, 1, time.Second, 0)

// Probe asks the shared store whether it is back, if the circuit is open
// and a probe is due; otherwise it does nothing. Requests probe by
// themselves; Probe lets an idle instance (a readiness check) find out too.
func (s *Store) Probe(ctx context.Context) {
	if !s.degraded.Load() || !s.mayCallShared(s.opts.Clock.Now()) {
		return
	}
	if _, err := s.opts.Shared.Decide(ctx, store.NewKey("sluice-probe"), probeLimit, s.opts.Clock.Now(), 0); err != nil {
		s.failed()
		return
	}
	s.succeeded()
}

// probeLoop probes at every tick of t while the circuit is open, until ctx
// ends.
func (s *Store) probeLoop(ctx context.Context, t clock.Ticker) {
	defer close(s.probesDone)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			s.Probe(ctx)
		}
	}
}

// mayCallShared reports whether the shared store may be called now: always
// while the circuit is closed; once per ProbeInterval while it is open.
func (s *Store) mayCallShared(now time.Time) bool {
	if !s.degraded.Load() {
		return true
	}
	next := s.nextProbe.Load()
	if now.UnixNano() < next {
		return false
	}
	// One caller wins the probe; the others stay on the failure policy.
	return s.nextProbe.CompareAndSwap(next, now.Add(s.opts.ProbeInterval).UnixNano())
}

// failed counts a shared-store failure and opens the circuit at Threshold.
func (s *Store) failed() {
	s.stats.SharedErrors.Add(1)
	if s.failures.Add(1) < int32(s.opts.Threshold) {
		return
	}
	s.nextProbe.Store(s.opts.Clock.Now().Add(s.opts.ProbeInterval).UnixNano())
	if s.change(false) && s.opts.OnStateChange != nil {
		s.opts.OnStateChange(true)
	}
}

// succeeded closes the circuit.
func (s *Store) succeeded() {
	// Read first: every decision succeeds, and a write on every one would
	// move the counter's cache line between the CPUs deciding.
	if s.failures.Load() != 0 {
		s.failures.Store(0)
	}
	if s.change(true) && s.opts.OnStateChange != nil {
		s.opts.OnStateChange(false)
	}
}

// change moves the circuit out of the state from (degraded or not) and
// reports whether this call did. The time of the change is recorded
// before the state changes, so that whoever sees the new state also sees
// its time (counter): seen with the previous change's time, a reservation
// the other store made just before would count as this one's.
func (s *Store) change(from bool) bool {
	if s.degraded.Load() != from {
		return false
	}
	now := limiter.UnixMicro(s.opts.Clock.Now())
	for { // the latest change's time, should two race
		old := s.switched.Load()
		if old >= now || s.switched.CompareAndSwap(old, now) {
			break
		}
	}
	return s.degraded.CompareAndSwap(from, !from)
}

// Close stops the background prober, if any, and closes the shared and
// fallback stores.
func (s *Store) Close() error {
	if s.stopProbes != nil {
		s.stopProbes()
		<-s.probesDone
	}
	err := s.opts.Shared.Close()
	if s.opts.Fallback != nil {
		if e := s.opts.Fallback.Close(); err == nil {
			err = e
		}
	}
	return err
}
