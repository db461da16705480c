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

	mu       sync.Mutex
	phase    string
	inFlight *sync.WaitGroup // requests sent since the last drain
	phases   map[string]*phaseStats
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
	l := &load{stop: make(chan struct{}), phase: "start", inFlight: new(sync.WaitGroup), phases: map[string]*phaseStats{}}
	for w := range workers {
		l.wg.Go(func() {
			for i := range loadPerWorker {
				select {
				case <-l.stop:
					return
				default:
				}
				phase, sent := l.send()
				a := get(c, insts[(w+i)%len(insts)], client)
				l.record(phase, a)
				sent.Done()
				time.Sleep(loadPause)
			}
		})
	}
	t.Cleanup(l.finish)
	return l
}

// send returns the phase a request sent now belongs to, and the group it
// is in flight in until it is answered.
func (l *load) send() (string, *sync.WaitGroup) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight.Add(1)
	return l.phase, l.inFlight
}

// setPhase names the phase the requests sent from now on belong to, and
// returns once every request sent before has been answered, so that a
// fault that follows meets none of them.
func (l *load) setPhase(name string) {
	l.mu.Lock()
	l.phase = name
	l.mu.Unlock()
	l.drain()
}

// drain waits until every request sent so far has been answered.
func (l *load) drain() {
	l.mu.Lock()
	sent := l.inFlight
	l.inFlight = new(sync.WaitGroup)
	l.mu.Unlock()
	sent.Wait()
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
