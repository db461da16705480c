// Package fixedcap models a service of fixed capacity: the upstream that
// `sluice demo overload` and the protect benchmark (bench/run.sh protect)
// put behind a gateway, so that overload has something real to overload.
//
// The model is a pool of Capacity workers, as in a service with a fixed
// thread pool or a fixed number of database connections. A worker serves
// one request at a time for ServiceTime, multiplied by the slow-down factor
// in force when the work starts (SetSlowdown: 3 makes every request three
// times as expensive, as month-end analysis does to a claims service). A
// request that arrives while every worker is busy waits in the service's
// own backlog, first come first served, as requests wait in a thread
// pool's accept queue. So the service's latency is its backlog wait plus
// the service time, and it rises as soon as more than Capacity requests
// are at the service at once: with n there, a newcomer answers after about
// ⌈n/Capacity⌉ × ServiceTime, while the throughput stays Capacity /
// ServiceTime whatever the load. Requests beyond capacity only add
// latency; that is the overload a gateway in front must prevent.
//
// A caller that disconnects while its request waits in the backlog leaves
// it; a request a worker has started is finished, as a real service
// finishes work whose caller went away. With MaxBacklog set, a request
// that finds that many already waiting is refused at once with 503 (no
// Retry-After): the service's own last line of defence, which a gateway
// in front should never let it reach.
//
// Stats counts what the service saw, above all MaxInFlight: the most
// requests at the service at once (working and waiting), which a gateway
// with a ceiling must keep at or below it.
package fixedcap

import (
	"errors"
	"net/http"
	"sync"
	"time"
)

// Config describes a Service.
type Config struct {
	// Capacity is how many requests the service works on at once (> 0).
	Capacity int
	// ServiceTime is how long one request takes a worker (> 0) at a
	// slow-down factor of 1.
	ServiceTime time.Duration
	// MaxBacklog is how many requests may wait for a worker; a request
	// finding that many waiting is refused with 503. 0 means no bound.
	MaxBacklog int
}

// Stats is what a Service saw since it started or since Reset.
type Stats struct {
	// InFlight is how many requests are at the service now, working or
	// waiting; MaxInFlight the most there were at once.
	InFlight    int `json:"in_flight"`
	MaxInFlight int `json:"max_in_flight"`
	// Served counts requests answered 200; Refused those refused with 503
	// (backlog full); Left those whose caller went away in the backlog.
	Served  int `json:"served"`
	Refused int `json:"refused"`
	Left    int `json:"left"`
	// Slowdown is the factor in force.
	Slowdown float64 `json:"slowdown"`
}

// Service is the fixed-capacity service. It is an http.Handler answering
// every method and path with 200 and the body "ok\n" once its work is
// done. It is safe for concurrent use.
type Service struct {
	cfg Config

	mu       sync.Mutex
	busy     int                  // workers at work
	backlog  []chan time.Duration // waiters, oldest first; sent their work when given a worker
	slowdown float64
	stats    Stats

	sleep func(time.Duration) // the work: time.Sleep; tests hold it
}

// New returns a Service, or an error naming the field out of range.
func New(cfg Config) (*Service, error) {
	var errs []error
	if cfg.Capacity <= 0 {
		errs = append(errs, errors.New("fixedcap: capacity: want a whole number above 0"))
	}
	if cfg.ServiceTime <= 0 {
		errs = append(errs, errors.New("fixedcap: service time: want a duration above 0"))
	}
	if cfg.MaxBacklog < 0 {
		errs = append(errs, errors.New("fixedcap: max backlog: want 0 (no bound) or more"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, slowdown: 1, sleep: time.Sleep}, nil
}

// SetSlowdown makes every request started from now on take factor ×
// ServiceTime (factor ≥ 1 slows the service down; 1 is normal). A factor
// of 0 or less counts as 1.
func (s *Service) SetSlowdown(factor float64) {
	if factor <= 0 {
		factor = 1
	}
	s.mu.Lock()
	s.slowdown = factor
	s.mu.Unlock()
}

// Stats returns what the service saw since it started or since Reset.
func (s *Service) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Slowdown = s.slowdown
	return st
}

// Reset starts the counts again from now (MaxInFlight from the requests
// at the service now). The slow-down factor stays.
func (s *Service) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats = Stats{InFlight: s.stats.InFlight, MaxInFlight: s.stats.InFlight}
}

var okBody = []byte("ok\n")

// ServeHTTP waits for a worker, works for the service time and answers
// 200 "ok\n"; or 503 when the backlog is full.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	work, ok := s.arrive()
	if !ok {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("backlog full\n")) // the caller went away if this fails
		return
	}
	if work == 0 { // waiting in the backlog
		if work = s.wait(r); work == 0 {
			return // the caller went away: nobody to answer
		}
	}
	s.sleep(work) // a started request is finished, as a real service does
	s.finish()
	h := w.Header()
	h["Content-Type"] = []string{"text/plain; charset=utf-8"}
	h["Content-Length"] = []string{"3"}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(okBody) // the caller went away if this fails
}

// arrive counts a request in. It returns the work to do when a worker
// was free, 0 when the request must wait, and ok false when the backlog
// is full.
func (s *Service) arrive() (work time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy >= s.cfg.Capacity && s.cfg.MaxBacklog > 0 && len(s.backlog) >= s.cfg.MaxBacklog {
		s.stats.Refused++
		return 0, false
	}
	s.stats.InFlight++
	s.stats.MaxInFlight = max(s.stats.MaxInFlight, s.stats.InFlight)
	if s.busy < s.cfg.Capacity {
		s.busy++
		return s.workLocked(), true
	}
	return 0, true
}

// workLocked is the service time of a request starting now.
func (s *Service) workLocked() time.Duration {
	return time.Duration(float64(s.cfg.ServiceTime) * s.slowdown)
}

// wait waits in the backlog for a worker and returns the work to do, or 0
// when the caller went away first (the request then left the backlog).
func (s *Service) wait(r *http.Request) time.Duration {
	s.mu.Lock()
	c := make(chan time.Duration, 1)
	s.backlog = append(s.backlog, c)
	s.mu.Unlock()
	select {
	case work := <-c:
		return work
	case <-r.Context().Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, w := range s.backlog {
		if w == c {
			s.backlog = append(s.backlog[:i], s.backlog[i+1:]...)
			s.stats.InFlight--
			s.stats.Left++
			return 0
		}
	}
	return <-c // handed a worker meanwhile: the work is sent already
}

// finish counts a request out and hands its worker to the oldest waiter.
func (s *Service) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.InFlight--
	s.stats.Served++
	if len(s.backlog) == 0 {
		s.busy--
		return
	}
	c := s.backlog[0]
	s.backlog[0] = nil
	s.backlog = s.backlog[1:]
	c <- s.workLocked() // buffered: never blocks
}
