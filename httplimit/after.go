package httplimit

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/nethttp"
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
}

// Failure says why the handler behind the Limiter has no answer from the
// service it protects (decision.Failure).
type Failure = decision.Failure

// The failures a handler reports with NoteFailure.
const (
	NoFailure       = decision.NoFailure
	UpstreamFailed  = decision.UpstreamFailed  // no answer: connection refused, reset, bad response
	UpstreamTimeout = decision.UpstreamTimeout // no answer in time
	CallerFailed    = decision.CallerFailed    // the caller's side broke (its body broke off or was too slow)
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

// record is a passed request's recorder and Responses, pooled.
type record struct {
	rec  recorder
	resp Response          // given to Options.OnResponse
	d    decision.Response // given to Verdict.Finish
}

// passRecorded passes r to next through a recorder and finishes v after,
// also when next panics (a reverse proxy aborts a response that broke off
// with http.ErrAbortHandler): the panic goes on once the steps have run.
func (l *Limiter) passRecorded(w http.ResponseWriter, r *http.Request, v *decision.Verdict, next http.Handler) {
	rc := l.records.Get().(*record)
	start := l.opts.Clock.Now()
	rc.rec = recorder{w: w, clk: l.opts.Clock, start: start}
	defer l.finish(r, v, rc)
	next.ServeHTTP(&rc.rec, r)
}

// finish builds the Response of a passed request and finishes v with it,
// then calls Options.OnResponse. It is deferred, so that recover sees
// next's panic.
func (l *Limiter) finish(r *http.Request, v *decision.Verdict, rc *record) {
	p := recover()
	rec := &rc.rec
	resp := &rc.resp // in the record: a Response escapes to OnResponse
	*resp = Response{Passed: true, Status: rec.status, Header: rec.w.Header(),
		Latency: l.opts.Clock.Now().Sub(rec.start), FirstByte: rec.firstByte, Failure: rec.failure,
		Aborted: p != nil || r.Context().Err() != nil}
	unanswered := rec.status == 0 && resp.Aborted // Aborted before any status was written
	if rec.status == 0 {
		resp.FirstByte = resp.Latency
	}
	if resp.Status == 0 {
		resp.Status = http.StatusOK
	}
	*rec = recorder{}
	rc.d = decision.Response{Passed: true, Status: resp.Status, Header: nethttp.Header(resp.Header), Latency: resp.Latency,
		FirstByte: resp.FirstByte, Aborted: resp.Aborted, Unanswered: unanswered, Failure: resp.Failure}
	defer l.recycle(rc)
	v.Finish(&rc.d)
	if l.opts.OnResponse != nil {
		l.opts.OnResponse(r, resp)
	}
	if p != nil {
		panic(p)
	}
}

// recycle puts rc back in the pool.
func (l *Limiter) recycle(rc *record) {
	*rc = record{}
	l.records.Put(rc)
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
