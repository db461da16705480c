package throttle

// Update changes what the Throttle enforces without forgetting what it
// holds: requests in flight keep their slots and count against the new
// limit, waiters keep their places and the upstream's holds stay. A gateway
// that reloads its configuration updates its Throttle instead of making a
// new one, which would start from nothing in flight and let up to twice the
// ceiling reach the upstream while the old requests finish.
//
// Clock and Rand stay those given to New. An adaptive limit keeps its value
// within the new bounds (a new window starts); turning adaptive on or off
// starts the limit at MaxInFlight. A shorter queue refuses its surplus at
// once (ReasonQueueFull), lowest priority and newest first; a higher limit
// hands free slots to waiters. On an error nothing changes.
func (t *Throttle) Update(cfg Config) error {
	if err := cfg.check(); err != nil {
		return err
	}
	cfg.Clock, cfg.Rand = t.cfg.Clock, t.cfg.Rand
	cfg.fill()
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clk.Now()
	switch {
	case cfg.Adaptive == nil:
		t.adapt, t.limit = nil, cfg.MaxInFlight
	case t.adapt == nil:
		t.adapt, t.limit = newWindow(*cfg.Adaptive, cfg.MaxInFlight, now), cfg.MaxInFlight
	default:
		t.adapt = newWindow(*cfg.Adaptive, cfg.MaxInFlight, now)
		t.limit = min(max(t.limit, cfg.Adaptive.MinInFlight), cfg.MaxInFlight)
	}
	t.cfg = cfg
	for t.queue.n > cfg.Queue.MaxLength {
		v := t.queue.lowest()
		t.queue.remove(v)
		t.decide(v, t.refuse(v.prio, ReasonQueueFull, t.slotWait(now, t.queue.n+1)))
	}
	t.dispatch(now)
	return nil
}
