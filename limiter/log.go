package limiter

// slidingLog keeps one entry per admitted request and counts exactly those of
// the last period: an entry made at time a counts while t < a + period.
// State.A keeps the entries' total cost, so a decision reads only the
// entries that expire, not the whole log. It returns the new state.
func slidingLog(l *Limit, s State, t, cost int64, d *Decision) State {
	log := s.Log
	if n := len(log); n > 0 && t < log[n-1].At { // the clock went back
		t = log[n-1].At
	}
	expired, used := 0, s.A
	for expired < len(log) && log[expired].At+l.period <= t {
		used -= log[expired].Cost
		expired++
	}
	log = log[expired:]
	*d = Decision{Limit: l.rate}
	switch {
	case cost > l.rate: // checked first: used+cost must not overflow
		d.RetryAfter = Never
	case used+cost <= l.rate || cost == 0: // entries kept from a higher rate deny no look
		d.Allowed = true
		used += cost
		// Only an admission rewrites the log, in place: a denial must
		// leave the caller's state as it was.
		log = appendEntry(s.Log[:copy(s.Log, log)], t, cost)
		if cost > 0 {
			d.Reservation = Reservation{At: t, Level: used}
		}
	default:
		d.RetryAfter = usec(logRetry(log, used+cost-l.rate, l.period, t))
	}
	d.Remaining = max(l.rate-used, 0) // entries kept from a higher rate can exceed it
	if n := len(log); n > 0 {
		d.Reset = usec(log[n-1].At + l.period - t)
		// The oldest entry frees its cost first; entries kept from a
		// higher rate must first expire down to the rate.
		d.Refill = usec(logRetry(log, max(used-l.rate, 0)+1, l.period, t))
	}
	return State{A: used, Log: log}
}

// appendEntry records an admitted request, merging it with an entry of the
// same microsecond so that the log never holds more entries than the rate.
func appendEntry(log []Entry, t, cost int64) []Entry {
	if cost == 0 {
		return log
	}
	if n := len(log); n > 0 && log[n-1].At == t {
		log[n-1].Cost += cost
		return log
	}
	return append(log, Entry{At: t, Cost: cost})
}

// logRetry returns how long until enough of the oldest entries expire to
// free excess units.
func logRetry(log []Entry, excess, period, t int64) int64 {
	freed := int64(0)
	for _, e := range log {
		freed += e.Cost
		if freed >= excess {
			return e.At + period - t
		}
	}
	return period // unreachable while cost <= rate
}
