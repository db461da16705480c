package limiter

// Reservation identifies the cost an allowed request reserved (spent) in
// its key's state: the time of the decision, in the store's clock, and
// the state just after it. For the buckets that is the level, in the
// limit's units of 1/n microsecond: together they name the point the
// bucket drains to, At*n + Level, which only a later request's spending
// moves on. For the windows the time names the window (sliding_log: the
// entry) the cost was counted in, and Level is the count after it. Stores
// pass it back to Cancel (a request held for its turn) and Settle.
type Reservation struct {
	At    int64 // microseconds since the Unix epoch
	Level int64 // buckets: units of 1/n microsecond; windows: the count
}

// Cancel gives back the reservation r of a request of cost held under l (a
// Decision with a Delay, made on the key whose state is s) that will not go
// on after all, such as one whose caller disconnected while it was held. It
// does so only if r is still the key's last reservation: no request has
// spent since (a look, a denial or time passing does not count). Then *s
// is left as if the request had never been made, and Cancel reports true.
// Otherwise *s is unchanged: a later request was given its turn behind
// this one, and handing the cost back would let a new request take the
// same turn, so that two pass on where the bucket allows one; the held
// request's turn then goes unused. A state written under another limit
// (Same false), or a limit without a bucket, gives nothing back.
//
// A reservation is cancelled at most once, and not settled after: once
// given back, a later request of the same cost takes the same turn, and
// its reservation then reads as this one's, so that a second cancel (or a
// refund) would give back that request's cost.
func (l *Limit) Cancel(s *State, r Reservation, cost int64) bool {
	need := cost * l.p
	if !l.alg.HasBurst() || cost < 1 || cost > l.burst || r.Level < need || r.At < 1 {
		return false
	}
	level, ok := l.lastSpent(s, r)
	if !ok || (l.alg != GCRA && level < need) { // its turn has long passed
		return false
	}
	l.giveBack(s, r, need, level)
	return true
}

// lastSpent returns the level of a bucket's state s and whether r is
// still its last spending: whether the point the bucket drains to is
// still r's. The level is measured at a time (gcra: the TAT, with its
// fraction as the level, TAT*n + frac); it is r's point if at*n + level =
// At*n + Level.
func (l *Limit) lastSpent(s *State, r Reservation) (level int64, ok bool) {
	var at int64
	switch l.alg {
	case TokenBucket:
		level, at = l.burst*l.p-s.A, s.B
	case GCRA:
		level, at = s.B, s.A
	default:
		level, at = s.A, s.B
	}
	// Both levels are below 2^53, so the points can only be equal for
	// |at - At| <= 2^53/n, where (at - At)*n is exact (as in Redis).
	dt := at - r.At
	return level, at != 0 && dt >= -exactLimit/l.n && dt <= exactLimit/l.n && dt*l.n+level == r.Level
}

// giveBack gives need units (r.Level or less) back into a bucket whose
// last spending was r and whose level is level (lastSpent): gcra goes
// back to r's point less need, the others give back need, but no more of
// it than has not drained since.
func (l *Limit) giveBack(s *State, r Reservation, need, level int64) {
	switch l.alg {
	case TokenBucket:
		s.A += min(need, level)
	case GCRA:
		rest := r.Level - need
		q := rest / l.n
		s.A, s.B = r.At+q, rest-q*l.n
	default:
		s.A -= min(need, level)
	}
}
