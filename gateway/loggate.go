package gateway

import (
	"sync"
	"time"

	"github.com/sluice-rl/sluice/clock"
)

// logGate lets one log line per subject through per interval, so that a
// flood of limited requests does not flood the log. Subjects are bounded by
// the configuration (client ids and rule names); the map is cleared when it
// grows past maxSubjects anyway.
type logGate struct {
	clock    clock.Clock
	interval time.Duration
	mu       sync.Mutex
	last     map[logSubject]time.Time
}

// logSubject is what one log line is about: a kind of event and, for some,
// the client and rule. A struct key spares building a string per 429.
type logSubject struct{ kind, client, rule string }

const maxSubjects = 10000

func newLogGate(c clock.Clock, interval time.Duration) *logGate {
	return &logGate{clock: c, interval: interval, last: map[logSubject]time.Time{}}
}

// allow reports whether subject may log now, and if so starts its interval.
func (g *logGate) allow(subject logSubject) bool { return g.allowAt(g.clock.Now(), subject) }

// allowAt is allow at now, a time read of the gateway's clock already.
func (g *logGate) allowAt(now time.Time, subject logSubject) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t, ok := g.last[subject]; ok && now.Sub(t) < g.interval && now.Sub(t) >= 0 {
		return false
	}
	if len(g.last) >= maxSubjects {
		clear(g.last)
	}
	g.last[subject] = now
	return true
}
