package gossip

import (
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// Supported reports whether the gossip store keeps alg within its bound:
// the window algorithms, whose state is a count per epoch-aligned window
// that adds up across instances. The bucket algorithms and sliding_log
// keep a level or a log that does not.
func Supported(alg limiter.Algorithm) bool {
	return alg == limiter.FixedWindow || alg == limiter.SlidingWindow
}

// SupportedNames names the algorithms Supported accepts, for messages.
const SupportedNames = "fixed_window or sliding_window"

// windows is one party's counts for one key, aligned on a window start:
// the count of the window starting at start (cur) and of the one before
// it (prev), read from a window algorithm's limiter.State.
type windows struct{ prev, cur int64 }

// align reads s, written under l, as the counts of the window starting at
// start: the state's own window if it is that one, its current count as
// the previous window's if it is the one before, nothing otherwise
// (fixed_window keeps no previous window).
func align(l *limiter.Limit, s limiter.State, start int64) windows {
	period := int64(l.Period() / time.Microsecond)
	switch l.Algorithm() {
	case limiter.FixedWindow:
		if s.A == start {
			return windows{cur: s.B}
		}
	case limiter.SlidingWindow:
		prev, cur := s.B>>32, s.B&0xffffffff
		switch s.A {
		case start:
			return windows{prev: prev, cur: cur}
		case start - period:
			return windows{prev: cur}
		}
	}
	return windows{}
}

// state is the limiter.State of the counts w in the window starting at
// start, under an algorithm of l's kind. Counts beyond 32 bits (the sum of
// several instances' counts, each at most the rate) are held at the
// largest a sliding_window state keeps, which is more than any rate.
func state(l *limiter.Limit, start int64, w windows) limiter.State {
	if l.Algorithm() == limiter.FixedWindow {
		return limiter.State{A: start, B: w.cur}
	}
	const most = 0xffffffff
	return limiter.State{A: start, B: min(w.prev, most)<<32 | min(w.cur, most)}
}

// spent is what w counts against a decision: both windows for
// sliding_window (the previous one weighs up to all of it), the current one
// for fixed_window.
func spent(l *limiter.Limit, w windows) int64 {
	if l.Algorithm() == limiter.FixedWindow {
		return w.cur
	}
	return w.prev + w.cur
}

// windowStart returns the start of the window of period (µs) holding t (µs).
func windowStart(t, period int64) int64 { return t - t%period }
