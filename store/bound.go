package store

import "time"

// Bounded is implemented by stores that end every DecideEach, decided or
// failed, within a bound of their own from the call, whatever the
// caller's context: a caller whose own bound is longer need not set it
// (a context and a timer per call spared). The caller's cancellation
// still ends the call sooner.
type Bounded interface {
	// DecideBound is that bound, and true; false if the store has none
	// (its decisions end only with the caller's context).
	DecideBound() (time.Duration, bool)
}
