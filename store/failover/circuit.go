package failover

import (
	"time"
)

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
	if !s.degraded.Swap(true) && s.opts.OnStateChange != nil {
		s.opts.OnStateChange(true)
	}
}

// succeeded closes the circuit.
func (s *Store) succeeded() {
	s.failures.Store(0)
	if s.degraded.Swap(false) && s.opts.OnStateChange != nil {
		s.opts.OnStateChange(false)
	}
}

// Close closes the shared and fallback stores.
func (s *Store) Close() error {
	err := s.opts.Shared.Close()
	if s.opts.Fallback != nil {
		if e := s.opts.Fallback.Close(); err == nil {
			err = e
		}
	}
	return err
}
