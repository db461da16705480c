package httplimit

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/sluice-rl/sluice/clock"
)

// Response is what the handler behind the Limiter answered, seen after it
// returned: what a step that settles a request (gives back a concurrency
// lease or a throttle slot, refunds or charges a cost, feeds metrics) needs.
type Response struct {
	// Passed is false when the Limiter answered the request itself and the
	// handler never ran (Status is then the Limiter's own).
	Passed bool
	// Status is the final status written (200 when the handler wrote a
	// body without one, or nothing at all).
	Status int
	// Header is the response header as written. It is valid only during
	// the call.
	Header http.Header
	// Latency is the time from passing the request on to the handler's
	// return, on the Limiter's clock: with a body streamed to the caller,
	// as slow as the caller reads.
	Latency time.Duration
	// FirstByte is the time from passing the request on to the handler's
	// status (its first WriteHeader, Write, Flush or Hijack), on the
	// Limiter's clock: the service's own latency, whatever the caller's
	// reading speed. Latency when nothing was written.
	FirstByte time.Duration
	// Aborted is true when the caller went away before the handler
	// returned (its context ended), or the handler panicked.
	Aborted bool
	// Failure is what the handler reported with NoteFailure: the answer
	// is its own, not the protected service's.
	Failure Failure

	unanswered bool // Aborted before any status was written
}

// Failure says why the handler behind the Limiter has no answer from the
// service it protects.
type Failure uint8

// The failures a handler reports with NoteFailure.
const (
	NoFailure       Failure = iota
	UpstreamFailed          // no answer: connection refused, reset, bad response
	UpstreamTimeout         // no answer in time
	CallerFailed            // the caller's side broke (its body broke off or was too slow)
)

// NoteFailure tells the Limiter in front of a handler that the answer the
// handler writes on w is its own because the protected service gave none
// (a reverse proxy's error handler calls it). w is the ResponseWriter the
// handler was given, or one wrapping it (found through Unwrap). It does
// nothing when no Limiter records the response.
func NoteFailure(w http.ResponseWriter, f Failure) {
	for w != nil {
		if rec, ok := w.(*recorder); ok {
			rec.failure = f
			return
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}

// afterStep is one thing done once a request is answered: giving back a
// lease or a throttle slot, settling a reserved cost. A step is a field of
// the request's scratch, appended to scratch.after while deciding, so that
// adding one allocates nothing; it runs whether the request was passed on
// or refused later in the decision (resp.Passed). Steps run last appended
// first, before Options.OnResponse: the throttle slot, taken last, is given
// back at once, not after the store's round trips to release leases and
// settle costs (a store slow to answer would hold the upstream's slots).
type afterStep interface {
	after(l *Limiter, r *http.Request, resp *Response)
}

// serve decides r under set and passes it to next, then runs the after
// steps. Without steps and without Options.OnResponse the handler gets w
// itself: nothing is recorded.
func (l *Limiter) serve(w http.ResponseWriter, r *http.Request, set *Settings, next http.Handler) {
	s := l.scratch.Get().(*scratch)
	s.after, s.settled = s.after[:0], false
	defer l.recycle(w, r, s)
	r, pass := l.decide(w, r, set, s)
	switch {
	case pass && len(s.after) == 0 && l.opts.OnResponse == nil:
		next.ServeHTTP(w, r)
	case pass:
		l.passRecorded(w, r, s, next)
	case len(s.after) > 0 || l.opts.OnResponse != nil:
		s.resp = Response{Status: s.report.Status, Header: w.Header()}
		l.settle(r, s, &s.resp)
	}
}

// recycle puts s back in the pool once r is done with. If deciding
// panicked (the program's OnDecision, a store) after r took something (a
// throttle slot, a lease, a reservation), the after steps give it back
// first, as for a request the Limiter refused; the panic goes on.
func (l *Limiter) recycle(w http.ResponseWriter, r *http.Request, s *scratch) {
	if !s.settled && len(s.after) > 0 {
		s.resp = Response{Status: http.StatusInternalServerError, Header: w.Header(), Aborted: true}
		l.settle(r, s, &s.resp)
	}
	s.resp = Response{}
	clear(s.after) // no step outlives its request
	s.after = s.after[:0]
	l.scratch.Put(s)
}

// passRecorded passes r to next through a recorder and settles it after,
// also when next panics (a reverse proxy aborts a response that broke off
// with http.ErrAbortHandler): the panic goes on once the steps have run.
func (l *Limiter) passRecorded(w http.ResponseWriter, r *http.Request, s *scratch, next http.Handler) {
	rec := &s.rec
	start := l.opts.Clock.Now()
	*rec = recorder{w: w, clk: l.opts.Clock, start: start}
	defer l.finish(r, s, start)
	next.ServeHTTP(rec, r)
}

// finish builds the Response of a passed request and settles it. It is
// deferred, so that recover sees next's panic.
func (l *Limiter) finish(r *http.Request, s *scratch, start time.Time) {
	p := recover()
	rec := &s.rec
	resp := &s.resp // in the scratch: a Response escapes to OnResponse
	*resp = Response{Passed: true, Status: rec.status, Header: rec.w.Header(),
		Latency: l.opts.Clock.Now().Sub(start), FirstByte: rec.firstByte, Failure: rec.failure,
		Aborted: p != nil || r.Context().Err() != nil}
	if rec.status == 0 {
		resp.FirstByte, resp.unanswered = resp.Latency, resp.Aborted
	}
	if resp.Status == 0 {
		resp.Status = http.StatusOK
	}
	*rec = recorder{}
	l.settle(r, s, resp)
	if p != nil {
		panic(p)
	}
}

// settle runs the request's after steps, then Options.OnResponse. A step
// that panics does not keep the others from running (each gives back
// something of its own); the panic goes on after them.
func (l *Limiter) settle(r *http.Request, s *scratch, resp *Response) {
	s.settled = true
	l.runSteps(r, s.after, resp)
	if l.opts.OnResponse != nil {
		l.opts.OnResponse(r, resp)
	}
}

// runSteps runs steps last first, the rest deferred so that they run even
// if one panics.
func (l *Limiter) runSteps(r *http.Request, steps []afterStep, resp *Response) {
	n := len(steps)
	if n == 0 {
		return
	}
	defer l.runSteps(r, steps[:n-1], resp)
	steps[n-1].after(l, r, resp)
}

// recorder is the ResponseWriter a passed request's handler gets when
// something is settled after the response: it remembers the status. It
// keeps what the writer below offers: Flush and Hijack through
// http.ResponseController (so through other wrappers' Unwrap), ReadFrom
// (sendfile), and Unwrap for ResponseController's other methods.
type recorder struct {
	w         http.ResponseWriter
	status    int // the final status, 0 until written
	failure   Failure
	clk       clock.Clock
	start     time.Time     // when the request was passed on
	firstByte time.Duration // from start to the status
}

// wrote records the final status code, once, and when it came.
func (rec *recorder) wrote(code int) {
	if rec.status == 0 {
		rec.status, rec.firstByte = code, rec.clk.Now().Sub(rec.start)
	}
}

func (rec *recorder) Header() http.Header { return rec.w.Header() }

func (rec *recorder) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		rec.wrote(code)
	}
	rec.w.WriteHeader(code)
}

func (rec *recorder) Write(p []byte) (int, error) {
	rec.wrote(http.StatusOK)
	return rec.w.Write(p)
}

// ReadFrom keeps the writer's own ReadFrom (sendfile on a TCP connection).
func (rec *recorder) ReadFrom(src io.Reader) (int64, error) {
	rec.wrote(http.StatusOK)
	if rf, ok := rec.w.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(writerOnly{rec.w}, src)
}

// Flush flushes the writer below, if it can.
func (rec *recorder) Flush() {
	rec.wrote(http.StatusOK)
	_ = http.NewResponseController(rec.w).Flush()
}

// Hijack hands over the connection, if the writer below can.
func (rec *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(rec.w).Hijack()
	if err == nil {
		rec.wrote(http.StatusSwitchingProtocols)
	}
	return conn, brw, err
}

// Unwrap lets http.ResponseController reach the writer below.
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.w }

// writerOnly hides a writer's ReadFrom, so that io.Copy does not call it
// back.
type writerOnly struct{ io.Writer }
