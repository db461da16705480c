package throttle

import (
	"context"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/clock"
)

// Throttle admits requests to a protected service: at most its limit hold a
// slot at once, and over the limit they wait in its queue or are refused
// with a reason and a time to retry after. It starts no goroutine: a
// waiting caller blocks in its own, and releasing a slot hands it to the
// next waiter. It is safe for concurrent use.
//
// It reads its clock only with its mutex held, so the times it records are
// in order: a caller that read the clock and then waited for the lock while
// another recorded a later completion would look to it like a clock gone
// back, which restarts the completion rate from nothing.
type Throttle struct {
	clk clock.Clock
	rnd func() float64
	cfg Config

	mu       sync.Mutex
	inFlight int
	limit    int
	queue    queue
	seq      uint64 // numbers waiters in order of arrival
	done     completions
	adapt    *window // nil without Config.Adaptive
	holds    holds
	counts   counters
	free     []*slot // slots given back, for reuse
}

// New returns a Throttle enforcing cfg, or an error naming the field that
// is out of range.
func New(cfg Config) (*Throttle, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.fill()
	t := &Throttle{clk: cfg.Clock, rnd: cfg.Rand, cfg: cfg, limit: cfg.MaxInFlight}
	if cfg.Adaptive != nil {
		t.adapt = newWindow(*cfg.Adaptive, cfg.MaxInFlight, t.clk.Now())
	}
	return t, nil
}

// Request is what the Throttle needs to know about a request.
type Request struct {
	// Priority orders requests at the limit (zero value: Normal). Low is
	// shed early and never queues. The caller decides it: in sluice, the
	// highest of the matched rules' priorities and the priority the
	// caller's plan grants (a plan raises, never lowers). Values outside
	// Low..Critical count as the nearest.
	Priority Priority
	// Degrade marks a non-essential request: it is refused
	// (ReasonDegraded) while in flight ≥ ShedFrom × limit, whatever its
	// priority.
	Degrade bool
	// Client names the caller, for fair queuing between callers and for
	// holding one caller after its upstream 429; "" is one anonymous caller.
	Client string
}

// Decision is the Throttle's answer. An admitted Decision holds a slot until
// its Release.
type Decision struct {
	// Admitted is true when the request holds a slot.
	Admitted bool
	// Reason says why the request was refused (ReasonNone when admitted).
	Reason Reason
	// RetryAfter is, for a refusal, when to try again: the expected wait,
	// or the upstream's remaining hold. It is never 0 for a refusal; a
	// Retry-After header rounds it up to whole seconds (RetryAfterSeconds).
	RetryAfter time.Duration
	// Waited is how long the request waited in the queue.
	Waited time.Duration
	// Limit is the limit in force when the decision was made.
	Limit int

	t      *Throttle // nil for a refusal
	s      *slot     // the slot held, while s.gen == gen
	gen    uint64
	start  time.Time // when the slot was taken
	client string
}

// slot is a slot's token. A Decision is a value and may be copied; the
// first Release of any copy gives the slot back and moves gen on, so a
// second Release (of the same copy or another) finds gen changed and does
// nothing, even once the token holds a new request's slot. Tokens are
// reused, so admission allocates nothing once as many exist as are in
// flight at most (0 allocs/op: go test -run x -bench AcquireRelease
// ./throttle).
type slot struct{ gen uint64 }

// RetryAfterSeconds is RetryAfter rounded up to whole seconds, at least 1:
// the value of a Retry-After header.
func (d Decision) RetryAfterSeconds() int {
	s := int((d.RetryAfter + time.Second - 1) / time.Second)
	return max(s, 1)
}

// minRetryAfter is the least RetryAfter of a refusal, so that it is never 0.
const minRetryAfter = time.Millisecond

// Acquire decides whether r may go to the service now. When the service is
// full and the queue takes r, Acquire waits until a slot is handed to it,
// it is displaced, or ctx ends (then it returns ReasonCanceled). An admitted
// Decision must be released with Release (later Releases of it or of a
// copy do nothing).
func (t *Throttle) Acquire(ctx context.Context, r Request) Decision {
	r.Priority = min(max(r.Priority, Low), Critical)
	t.mu.Lock()
	d, w := t.arrive(t.clk.Now(), r) // read under the lock: see Throttle
	t.mu.Unlock()
	if w == nil {
		return d
	}
	return t.wait(ctx, w)
}

// arrive decides r at now; it returns a waiter when r joins the queue. The
// caller holds t.mu.
func (t *Throttle) arrive(now time.Time, r Request) (Decision, *waiter) {
	if left := t.holds.held(now, r); left > 0 {
		return t.refuse(r.Priority, ReasonUpstreamBackoff, left), nil
	}
	if d, refused := t.early(now, r); refused {
		return d, nil
	}
	if t.inFlight < t.limit && t.queue.n == 0 {
		return t.admit(now, r.Priority, r.Client), nil
	}
	if r.Priority == Low { // at the limit Low never queues
		return t.refuse(r.Priority, ReasonShed, t.slotWait(now, t.queue.n+1)), nil
	}
	return t.enqueue(now, r)
}

// early refuses a Degrade request while in flight ≥ ShedFrom × limit, and a
// Low request there with a probability growing linearly from
// 1/(limit-line+1) at the line to 1 at the limit.
func (t *Throttle) early(now time.Time, r Request) (Decision, bool) {
	if !t.shedding() {
		return Decision{}, false
	}
	if r.Degrade {
		return t.refuse(r.Priority, ReasonDegraded, t.slotWait(now, t.queue.n+1)), true
	}
	if r.Priority != Low || t.inFlight >= t.limit {
		return Decision{}, false
	}
	line := t.shedLine()
	if share := (float64(t.inFlight) - line + 1) / (float64(t.limit) - line + 1); t.rnd() < share {
		return t.refuse(r.Priority, ReasonShed, t.slotWait(now, 1)), true
	}
	return Decision{}, false
}

// shedLine is where early refusals start: ShedFrom × limit in flight.
func (t *Throttle) shedLine() float64 { return t.cfg.ShedFrom * float64(t.limit) }

// shedding reports whether in flight is at the shed line or over it. The
// caller holds t.mu.
func (t *Throttle) shedding() bool { return float64(t.inFlight) >= t.shedLine() }

// slotWait is the expected time until n slots free up (0 if unknown).
func (t *Throttle) slotWait(now time.Time, n int) time.Duration {
	d, _ := t.done.wait(now, n)
	return d
}

// testHook, when set by a test, sees every decision as it is made, with
// t.mu held.
var testHook func(t *Throttle, p Priority, d Decision)

// admit takes a slot for a request of priority p.
func (t *Throttle) admit(now time.Time, p Priority, client string) Decision {
	if testHook != nil {
		testHook(t, p, Decision{Admitted: true})
	}
	if t.inFlight == 0 {
		t.done.startBusy(now)
	}
	t.inFlight++
	t.counts.admitted[p.index()]++
	if t.adapt != nil {
		t.adapt.peak = max(t.adapt.peak, t.inFlight)
	}
	var s *slot
	if n := len(t.free); n > 0 {
		s = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		s = new(slot)
	}
	return Decision{Admitted: true, Limit: t.limit, t: t, s: s, gen: s.gen, start: now, client: client}
}

// refuse records and returns a refusal.
func (t *Throttle) refuse(p Priority, why Reason, after time.Duration) Decision {
	if testHook != nil {
		testHook(t, p, Decision{Reason: why})
	}
	t.counts.refused[p.index()][why]++
	return Decision{Reason: why, RetryAfter: max(after, minRetryAfter), Limit: t.limit}
}

// enqueue puts r in the queue if its expected wait and the queue's length
// allow, displacing a lower-priority waiter from a full queue.
func (t *Throttle) enqueue(now time.Time, r Request) (Decision, *waiter) {
	q := t.cfg.Queue
	wait, known := t.done.wait(now, t.queue.ahead(r.Priority, r.Client)+1)
	if q.MaxLength == 0 {
		return t.refuse(r.Priority, ReasonQueueFull, wait), nil
	}
	if known && q.MaxWait > 0 && wait > q.MaxWait {
		// Every waiter of a lower priority stands behind all that is
		// ahead of r, so it too now expects more than MaxWait: it goes
		// first, and r is never refused while a lower priority waits.
		for _, v := range t.queue.below(r.Priority) {
			t.decide(v, t.refuse(v.prio, ReasonWaitTooLong, wait))
		}
		return t.refuse(r.Priority, ReasonWaitTooLong, wait), nil
	}
	if t.queue.n >= q.MaxLength {
		v := t.queue.victim(r.Priority, r.Client)
		if v == nil {
			return t.refuse(r.Priority, ReasonQueueFull, t.slotWait(now, t.queue.n+1)), nil
		}
		t.queue.remove(v)
		t.decide(v, t.refuse(v.prio, ReasonQueueFull, wait))
	}
	t.seq++
	w := &waiter{prio: r.Priority, client: r.Client, since: now, seq: t.seq, ready: make(chan struct{})}
	if q.MaxWait > 0 { // started here, under the lock, so a fake clock cannot pass it by
		w.expiry = t.clk.NewTicker(q.MaxWait)
	}
	t.queue.push(w)
	t.counts.queued++
	return Decision{}, w
}

// decide hands w its final decision; w is out of the queue. The caller
// holds t.mu.
func (t *Throttle) decide(w *waiter, d Decision) {
	w.d = d
	close(w.ready)
}

// wait blocks until w is decided, ctx ends or w has waited MaxWait.
func (t *Throttle) wait(ctx context.Context, w *waiter) Decision {
	var expired <-chan time.Time
	if w.expiry != nil {
		defer w.expiry.Stop()
		expired = w.expiry.C()
	}
	select {
	case <-w.ready:
		return w.d
	case <-ctx.Done():
		return t.leave(w, ReasonCanceled)
	case <-expired:
		return t.leave(w, ReasonWaitTooLong)
	}
}

// leave takes w out of the queue because its caller went away
// (ReasonCanceled) or it waited MaxWait (ReasonWaitTooLong), unless it was
// decided meanwhile: then a canceled caller hands its slot on, and one that
// waited long enough keeps it.
func (t *Throttle) leave(w *waiter, why Reason) Decision {
	t.mu.Lock()
	if w.f != nil { // still queued
		now := t.clk.Now()
		t.queue.remove(w)
		after := minRetryAfter
		if why == ReasonWaitTooLong {
			// Those behind it wait longer still; refused first, so that
			// none is refused while a lower priority waits.
			after = t.slotWait(now, t.queue.n+1)
			for _, v := range t.queue.below(w.prio) {
				t.decide(v, t.refuse(v.prio, ReasonWaitTooLong, after))
			}
		}
		d := t.refuse(w.prio, why, after)
		d.Waited = now.Sub(w.since)
		t.mu.Unlock()
		return d
	}
	t.mu.Unlock()
	<-w.ready // decided meanwhile
	d := w.d
	if !d.Admitted || why != ReasonCanceled {
		return d
	}
	d.Release(Outcome{Canceled: true}) // the slot goes to the next waiter
	return Decision{Reason: ReasonCanceled, RetryAfter: minRetryAfter, Limit: d.Limit, Waited: d.Waited}
}

// dispatch hands free slots to waiters, highest priority first. The caller
// holds t.mu.
func (t *Throttle) dispatch(now time.Time) {
	for t.inFlight < t.limit {
		w := t.queue.pop()
		if w == nil {
			return
		}
		d := t.admit(now, w.prio, w.client)
		d.Waited = now.Sub(w.since)
		t.counts.waited += d.Waited
		t.decide(w, d)
	}
}

// Limit returns the limit in force: MaxInFlight, or less while the adaptive
// limit holds it lower.
func (t *Throttle) Limit() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.limit
}
