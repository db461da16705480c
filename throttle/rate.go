package throttle

import "time"

// ratePeriod is the span over which the completion rate is measured.
const ratePeriod = time.Second

// completions measures how fast slots free up, to predict a queued request's
// wait. It counts completions in the current and the previous period and
// weighs the previous by how much of it still lies within the last period
// (the sliding-window estimate). With no completion in the last two periods
// (and as a bound when a fading previous period counts almost nothing)
// the rate is taken as one per time the upstream has had work without
// finishing any (since the last completion, or since it last went from idle
// to busy if that is later; at least a period), so a stalled upstream makes
// the expected wait grow instead of staying unknown, and an idle hour does
// not make the first burst after it expect an hour per slot.
//
// A busy spell younger than a period is measured over itself: its
// completions came within it, not within a second that was mostly idle,
// and before its first one the rate is one per time it has been busy so
// far (not at least a period, nor what finished before the spell: the
// service was not saturated then). Measured over the period, a burst after a quiet spell expected a
// second a slot and more, and its first waiters, critical ones too, were
// refused at once though their slots were milliseconds away
// (TestQueueExpectedWaitBurstAfterQuiet). Of the estimates the fastest is
// taken: one too fast costs a waiter at most MaxWait in the queue, one too
// slow refuses a request the upstream had room for.
type completions struct {
	start     time.Time // start of the current period
	cur       int
	prev      int
	last      time.Time // the last completion; zero before the first
	busy      time.Time // when the last slot was taken with none in flight
	sinceBusy int       // completions since busy
}

// startBusy records that a slot was taken with none in flight at now.
func (c *completions) startBusy(now time.Time) {
	c.busy, c.sinceBusy = now, 0
}

// add records a completion at now.
func (c *completions) add(now time.Time) {
	c.roll(now)
	c.cur++
	c.sinceBusy++
	c.last = now
}

// roll moves the periods forward to now (and restarts them if the clock went
// back).
func (c *completions) roll(now time.Time) {
	switch e := now.Sub(c.start); {
	case c.start.IsZero() || e < 0 || e >= 2*ratePeriod:
		c.start, c.prev, c.cur = now, 0, 0
	case e >= ratePeriod:
		c.start, c.prev, c.cur = c.start.Add(ratePeriod), c.cur, 0
	}
}

// wait estimates how long until n more slots free up, at the rate measured
// up to now. ok is false before the first completion (the rate is unknown).
func (c *completions) wait(now time.Time, n int) (d time.Duration, ok bool) {
	if c.last.IsZero() {
		return 0, false
	}
	c.roll(now)
	frac := float64(ratePeriod-now.Sub(c.start)) / float64(ratePeriod)
	count := float64(c.prev)*frac + float64(c.cur)
	// At most one per time the upstream has been busy without finishing
	// any (at least a period, also when the clock went back): the estimate
	// when nothing is counted, and its bound when the count is a last
	// completion's weight fading to nothing as its period slides out.
	since := c.last
	if c.busy.After(since) {
		since = c.busy
	}
	per := float64(max(now.Sub(since), ratePeriod))
	if count > 0 {
		per = min(per, float64(ratePeriod)/count)
	}
	if busyFor := now.Sub(c.busy); !c.busy.IsZero() && busyFor >= 0 && busyFor < ratePeriod {
		// A young busy spell, measured over itself (as if one finished
		// now when none has yet).
		per = min(per, float64(busyFor)/float64(max(c.sinceBusy, 1)))
	}
	return time.Duration(min(per*float64(n), float64(maxEstimate))), true
}

// maxEstimate bounds an expected wait, so that a long stall times a long
// queue stays a sensible Retry-After and never overflows a Duration.
const maxEstimate = 24 * time.Hour
