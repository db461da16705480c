package decision

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-rl/sluice/internal/problem"
	"github.com/sluice-rl/sluice/throttle"
)

// Pressure is an outside reason to degrade: while any of its sources is
// on, a request the rules allowed is treated as if the service were above
// protect's shed_from. A request of a degrade rule is refused 503 (reason
// degraded) and a low-priority one 503 (reason shed) — all of them, not a
// growing share — whether or not the Settings have a Throttle. A request
// that is neither passes as before, to the Throttle if there is one.
//
// Its sources name who turned it on: "switch" (the operator's degrade
// switch), "signal:grid-carbon" (an outside signal above its line). The
// zero Pressure is off. It is safe for concurrent use: Set is rare and
// takes a lock, On is one atomic load, so a request pays nothing for a
// Pressure that is off.
type Pressure struct {
	mu    sync.Mutex                    // serialises Set
	state atomic.Pointer[pressureState] // nil while no source is on
}

// pressureState is the sources on at one moment; it is never changed once
// stored, so a request reads it without a lock.
type pressureState struct {
	sources []string // sorted, at least one
	named   string   // sources joined by ", ", for the problem detail
}

// Set turns source on or off. Setting it as it already is changes nothing.
func (p *Pressure) Set(source string, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var sources []string
	if st := p.state.Load(); st != nil {
		sources = st.sources
	}
	i, found := slices.BinarySearch(sources, source)
	if found == on {
		return
	}
	next := slices.Clone(sources)
	if on {
		next = slices.Insert(next, i, source)
	} else {
		next = slices.Delete(next, i, i+1)
	}
	if len(next) == 0 {
		p.state.Store(nil)
		return
	}
	p.state.Store(&pressureState{sources: next, named: strings.Join(next, ", ")})
}

// On reports whether any source is on; false for a nil Pressure.
func (p *Pressure) On() bool { return p.current() != nil }

// Sources returns the sources on now, sorted; nil when none is (or p is
// nil).
func (p *Pressure) Sources() []string {
	if st := p.current(); st != nil {
		return slices.Clone(st.sources)
	}
	return nil
}

// current is the state in force: nil while p is off or nil.
func (p *Pressure) current() *pressureState {
	if p == nil {
		return nil
	}
	return p.state.Load()
}

// pressureRetryAfter is the Retry-After of a refusal under Pressure. The
// pressure has no expected end a request could know of (a signal is read
// again every 30s by default, a switch lasts its ttl): a caller is told to
// come back in 30s rather than at once, which would only be refused again.
const pressureRetryAfter = 30 * time.Second

// pressed refuses, while st is on, a request the rules allowed that is
// non-essential (req.Degrade: ReasonDegraded) or low-priority (ReasonShed):
// 503 with Retry-After and a problem naming the sources. It reports
// whether it refused.
func (v *Verdict) pressed(st *pressureState, req throttle.Request) bool {
	if st == nil || (!req.Degrade && req.Priority > throttle.Low) {
		return false
	}
	reason := throttle.ReasonShed
	if req.Degrade {
		reason = throttle.ReasonDegraded
	}
	rep := &v.Report
	rep.Priority, rep.Refusal = req.Priority, reason
	rep.Status, rep.RetryAfter = statusUnavailable, pressureRetryAfter
	v.retryAfter(pressureRetryAfter)
	v.pressureDetail(reason, st.named)
	v.answer(problem.Problem{Title: "Service Unavailable", Status: statusUnavailable, Reason: reason.String()})
	return true
}

// pressureDetail writes into v.detail why a request is refused under
// Pressure: "non-essential requests are refused while the service is
// degraded (signal:grid-carbon); retry in 30s".
func (v *Verdict) pressureDetail(reason throttle.Reason, sources string) {
	b := v.detail[:0]
	if reason == throttle.ReasonDegraded {
		b = append(b, "non-essential requests are refused while the service is degraded ("...)
	} else {
		b = append(b, "low-priority requests are shed while the service is degraded ("...)
	}
	b = append(append(b, sources...), ')')
	v.detail = appendWait(b, pressureRetryAfter)
}
