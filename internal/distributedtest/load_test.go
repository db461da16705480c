package distributedtest

import (
	"maps"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Bounds of the background load: each worker sends at most loadPerWorker
// requests, one every loadPause, so a test can never flood the machine.
const (
	loadPerWorker = 4000
	loadPause     = 5 * time.Millisecond
)

// load is background traffic from one client over every instance, kept
// going through a fault, with what it saw recorded per phase of the test
// (the phase in force when each request was sent).
type load struct {
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once

	mu     sync.Mutex
	phase  string
	phases map[string]*phaseStats
}

// phaseStats is what the load saw in one phase.
type phaseStats struct {
	codes statuses
	max   time.Duration // slowest answer
}

// startLoad starts workers goroutines sending as client over insts in turn,
// in phase "start". It is stopped when the test ends, if not before.
func startLoad(t *testing.T, c *http.Client, insts []*instance, client string, workers int) *load {
	t.Helper()
	l := &load{stop: make(chan struct{}), phase: "start", phases: map[string]*phaseStats{}}
	for w := range workers {
		l.wg.Go(func() {
			for i := range loadPerWorker {
				select {
				case <-l.stop:
					return
				default:
				}
				phase := l.current()
				a := get(c, insts[(w+i)%len(insts)], client)
				l.record(phase, a)
				time.Sleep(loadPause)
			}
		})
	}
	t.Cleanup(l.finish)
	return l
}

func (l *load) current() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.phase
}

// setPhase names the phase the requests sent from now on belong to.
func (l *load) setPhase(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.phase = name
}

func (l *load) record(phase string, a answer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ps := l.phases[phase]
	if ps == nil {
		ps = &phaseStats{codes: statuses{}}
		l.phases[phase] = ps
	}
	ps.codes[a.status]++
	ps.max = max(ps.max, a.latency)
}

// finish stops the load and waits for its workers.
func (l *load) finish() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// stats returns what the load saw in phase.
func (l *load) stats(phase string) phaseStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	ps := l.phases[phase]
	if ps == nil {
		return phaseStats{codes: statuses{}}
	}
	return phaseStats{codes: maps.Clone(ps.codes), max: ps.max}
}
