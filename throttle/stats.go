package throttle

import "time"

// counters are the Throttle's running totals, guarded by its mutex.
type counters struct {
	admitted [numPriorities]uint64
	queued   uint64
	waited   time.Duration
	refused  [numPriorities][numReasons]uint64
}

// Stats is a snapshot of a Throttle's state and totals, for metrics.
type Stats struct {
	// InFlight is how many requests hold a slot.
	InFlight int
	// Limit is the limit in force; MaxInFlight the hard ceiling.
	Limit, MaxInFlight int
	// QueueLength is how many requests wait.
	QueueLength int
	// Admitted counts requests given a slot, from the queue or not
	// (AdmittedFor counts one priority).
	Admitted uint64
	// Shedding is true while in flight ≥ ShedFrom × limit: Degrade
	// requests are refused and Low ones shed. A caller that logs when
	// shedding starts and ends polls it.
	Shedding bool
	// Queued counts requests that joined the queue.
	Queued uint64
	// QueueWait is the total time requests admitted from the queue waited.
	QueueWait time.Duration
	// UpstreamHold is what remains of an upstream 503's hold on
	// non-critical requests (0: none); HeldClients how many callers an
	// upstream 429 holds (expired holds may still be counted until looked
	// at again).
	UpstreamHold time.Duration
	HeldClients  int

	admitted [numPriorities]uint64
	refused  [numPriorities][numReasons]uint64
}

// AdmittedFor returns how many requests of priority p were given a slot.
func (s Stats) AdmittedFor(p Priority) uint64 {
	if !p.valid() {
		return 0
	}
	return s.admitted[p.index()]
}

// Refused returns how many requests of priority p were refused for reason
// r.
func (s Stats) Refused(p Priority, r Reason) uint64 {
	if !p.valid() || r >= numReasons {
		return 0
	}
	return s.refused[p.index()][r]
}

// Stats returns a snapshot of the Throttle's state and totals.
func (t *Throttle) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clk.Now()
	return Stats{
		UpstreamHold: max(t.holds.all.Sub(now), 0),
		HeldClients:  len(t.holds.clients),
		InFlight:     t.inFlight,
		Limit:        t.limit,
		MaxInFlight:  t.cfg.MaxInFlight,
		QueueLength:  t.queue.n,
		Admitted:     total(t.counts.admitted),
		Shedding:     t.shedding(),
		Queued:       t.counts.queued,
		QueueWait:    t.counts.waited,
		admitted:     t.counts.admitted,
		refused:      t.counts.refused,
	}
}

func total(counts [numPriorities]uint64) uint64 {
	var n uint64
	for _, c := range counts {
		n += c
	}
	return n
}
