package throttle

import "time"

// Upstream back-pressure: the upstream's own Retry-After, obeyed. An
// upstream 503 with Retry-After holds every non-critical request for that
// long; a 429 with Retry-After holds the caller it answered. Held requests
// are refused at arrival (ReasonUpstreamBackoff, RetryAfter the time that
// remains), before any other work, and the queue gives up the waiters the
// hold covers at once.

// Back-off's bounds.
const (
	// defaultMaxBackoff is Config.MaxBackoff's default.
	defaultMaxBackoff = time.Minute
	// maxClientHolds bounds the callers held at once; beyond it a 429
	// holds no one more (its answer still reaches the caller).
	maxClientHolds = 10000
)

// holds are the upstream's pauses in force, guarded by the Throttle's
// mutex.
type holds struct {
	all     time.Time            // non-critical requests are held until then
	clients map[string]time.Time // a caller is held until then
}

// A 429 for the anonymous caller ("") holds no one: it would hold every
// caller the Throttle cannot tell apart.

// held returns how long r is still held at now (0: not held).
func (h *holds) held(now time.Time, r Request) time.Duration {
	var left time.Duration
	if r.Priority != Critical && now.Before(h.all) {
		left = h.all.Sub(now)
	}
	if until, ok := h.clients[r.Client]; ok {
		if now.Before(until) {
			left = max(left, until.Sub(now))
		} else {
			delete(h.clients, r.Client)
		}
	}
	return left
}

// holdAll holds non-critical requests until now+d (a later hold in force
// stays).
func (h *holds) holdAll(now time.Time, d time.Duration) {
	if until := now.Add(d); until.After(h.all) {
		h.all = until
	}
}

// holdClient holds one caller until now+d; it reports whether it did.
func (h *holds) holdClient(now time.Time, client string, d time.Duration) bool {
	if h.clients == nil {
		h.clients = make(map[string]time.Time)
	}
	if _, ok := h.clients[client]; !ok && len(h.clients) >= maxClientHolds {
		for c, until := range h.clients {
			if !now.Before(until) {
				delete(h.clients, c)
			}
		}
		if len(h.clients) >= maxClientHolds {
			return false
		}
	}
	if until := now.Add(d); until.After(h.clients[client]) {
		h.clients[client] = until
	}
	return true
}

// backoff applies an outcome's Retry-After, if Config.UpstreamBackoff asks
// for it, and refuses the waiters the new hold covers. The caller holds
// t.mu.
func (t *Throttle) backoff(now time.Time, client string, o Outcome) {
	if !t.cfg.UpstreamBackoff || o.RetryAfter <= 0 {
		return
	}
	d := min(o.RetryAfter, t.cfg.MaxBackoff)
	switch o.Status {
	case statusServiceUnavailable:
		t.holds.holdAll(now, d)
		for _, w := range t.queue.below(Critical) {
			t.decide(w, t.refuse(w.prio, ReasonUpstreamBackoff, d))
		}
	case statusTooManyRequests:
		if client == "" || !t.holds.holdClient(now, client, d) {
			return
		}
		for _, w := range t.queue.client(client) {
			t.decide(w, t.refuse(w.prio, ReasonUpstreamBackoff, d))
		}
	}
}
