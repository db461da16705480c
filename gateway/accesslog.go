package gateway

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/fastfront"
)

// accessLog writes the access_log block's lines: one JSON object per
// request, built on the data path into a pooled buffer and handed to one
// writer goroutine through a bounded channel. A line that finds the
// channel full is dropped and counted (sluice_access_log_dropped_total):
// the data path never waits for the log's file.
type accessLog struct {
	sample  float64
	lines   chan *[]byte
	dropped prometheus.Counter
	out     *bufio.Writer
	file    io.Closer // the file opened for access_log.path; nil for stdout, stderr or Options.AccessLog
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// lineBufs holds the buffers lines are built in: a line is built, sent,
// written and its buffer given back, so that a request allocates nothing
// for its line.
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// newAccessLog opens c's destination (w in its place when not nil) and
// starts its writer; nil when c is nil (no access log).
func newAccessLog(c *config.AccessLog, w io.Writer, reg prometheus.Registerer) (*accessLog, error) {
	if c == nil {
		return nil, nil
	}
	a := &accessLog{sample: c.Sample, lines: make(chan *[]byte, c.Buffer), stop: make(chan struct{}), done: make(chan struct{}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_access_log_dropped_total",
			Help: "Access log lines dropped because the buffer was full (the writer could not keep up)."})}
	switch {
	case w != nil:
	case c.Path == "stdout":
		w = os.Stdout
	case c.Path == "stderr":
		w = os.Stderr
	default:
		f, err := os.OpenFile(c.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return nil, fmt.Errorf("gateway: access_log.path: %w", err)
		}
		w, a.file = f, f
	}
	a.out = bufio.NewWriterSize(w, 64<<10)
	reg.MustRegister(a.dropped)
	go a.write()
	return a, nil
}

// write is the writer goroutine: it writes lines as they come, flushing
// whenever none is waiting, and once stopped writes those still buffered.
func (a *accessLog) write() {
	defer close(a.done)
	for {
		select {
		case b := <-a.lines:
			a.put(b)
			if len(a.lines) == 0 {
				_ = a.out.Flush()
			}
		case <-a.stop:
			for {
				select {
				case b := <-a.lines:
					a.put(b)
				default:
					_ = a.out.Flush()
					return
				}
			}
		}
	}
}

func (a *accessLog) put(b *[]byte) {
	_, _ = a.out.Write(*b)
	*b = (*b)[:0]
	lineBufs.Put(b)
}

// closeWait bounds how long Close waits for the writer to write what is
// buffered: a destination that takes no more (a stdout nobody reads) must
// not hold the process up.
const closeWait = 5 * time.Second

// Close stops the writer once it has written what is buffered, or after
// closeWait, and closes the file. Lines sent later are never written.
func (a *accessLog) Close() error {
	if a == nil {
		return nil
	}
	var err error
	a.once.Do(func() {
		close(a.stop)
		select {
		case <-a.done:
		case <-time.After(closeWait):
			err = fmt.Errorf("gateway: the access log's writer did not finish within %v; lines left unwritten", closeWait)
			return // the writer still holds the file
		}
		if a.file != nil {
			err = a.file.Close()
		}
	})
	return err
}

// send hands b to the writer, or drops and counts it if the buffer is full.
func (a *accessLog) send(b *[]byte) {
	select {
	case a.lines <- b:
	default:
		a.dropped.Inc()
		*b = (*b)[:0]
		lineBufs.Put(b)
	}
}

// logged reports whether a request is logged: always when sluice answered
// it itself (refused, or the upstream failed), else by the sample.
func (a *accessLog) logged(resp *decision.Response) bool {
	if !resp.Passed || resp.Failure != decision.NoFailure || a.sample >= 1 {
		return true
	}
	return a.sample > 0 && rand.Float64() < a.sample
}

// logAccess writes the access log's line of one request, if it is logged:
// the front's Finished. v is nil for a request refused before it was
// decided (malformed, a loop, no service).
func (g *Gateway) logAccess(ctx *fasthttp.RequestCtx, v *decision.Verdict, resp *decision.Response) {
	if !g.access.logged(resp) {
		return
	}
	bp := lineBufs.Get().(*[]byte)
	*bp = appendLine(*bp, ctx, v, resp, time.Now())
	g.access.send(bp)
}

// appendLine appends the JSON line of one request to b. It names the
// caller by its client id, never its key; the path is the cleaned one,
// without the query.
func appendLine(b []byte, ctx *fasthttp.RequestCtx, v *decision.Verdict, resp *decision.Response, now time.Time) []byte {
	began := ctx.Time()
	b = append(b, `{"time":"`...)
	b = began.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, `","request_id":`...)
	b = appendString(b, ctx.Request.Header.Peek(fastfront.RequestIDHeader))
	method, path := ctx.Method(), ctx.URI().PathOriginal()
	addr := fastfront.CallerAddr(ctx).Addr() // nothing counted (refused for its key, malformed): the connection's
	if v != nil {
		b = append(b, `,"client":`...)
		b = appendString(b, s2b(v.Report.Client))
		if v.Report.Cert != "" { // the certificate's selector or fingerprint, never its bytes
			b = append(b, `,"cert":`...)
			b = appendString(b, s2b(v.Report.Cert))
		}
		if v.Addr.IsValid() {
			addr = v.Addr
		}
		if v.Method != "" {
			method = s2b(v.Method)
		}
		if v.Path != "" {
			path = s2b(v.Path)
		}
	}
	if addr.IsValid() {
		b = append(b, `,"address":"`...)
		b = append(addr.AppendTo(b), '"')
	}
	b = append(b, `,"method":`...)
	b = appendString(b, method)
	b = append(b, `,"path":`...)
	b = appendString(b, path)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(resp.Status), 10)
	b = append(b, `,"decision":"`...)
	b = append(append(b, decisionOf(v, resp)...), '"')
	if v != nil {
		b = appendRules(b, &v.Report)
	}
	if rt := routeOf(v); rt != nil && resp.Passed {
		b = append(b, `,"upstream":`...)
		b = appendString(b, s2b(rt.up.Name))
	}
	if resp.Passed && resp.Failure == decision.NoFailure && resp.FirstByte > 0 {
		b = append(b, `,"upstream_ms":`...)
		b = appendMillis(b, resp.FirstByte)
	}
	b = append(b, `,"total_ms":`...)
	b = appendMillis(b, now.Sub(began))
	if n := ctx.Request.Header.ContentLength(); n >= 0 {
		b = append(b, `,"bytes_in":`...)
		b = strconv.AppendInt(b, int64(n), 10)
	}
	if n := bytesOut(ctx); n >= 0 {
		b = append(b, `,"bytes_out":`...)
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return append(b, "}\n"...)
}

// bytesOut is the length of the answer's body, -1 when it is not known
// (streamed without Content-Length, or an upgrade).
func bytesOut(ctx *fasthttp.RequestCtx) int {
	switch r := &ctx.Response; {
	case ctx.Hijacked() || r.StatusCode() == fasthttp.StatusSwitchingProtocols:
		return -1
	case r.IsBodyStream():
		return r.Header.ContentLength()
	case r.SkipBody:
		return 0
	}
	return len(ctx.Response.Body())
}

// appendRules appends the names of the rules that matched, and those that
// limited the request.
func appendRules(b []byte, rep *decision.Report) []byte {
	b = append(b, `,"rules":[`...)
	for i, r := range rep.Rules {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s2b(r.Rule))
	}
	b = append(b, ']')
	first := true
	for _, r := range rep.Rules {
		if r.Outcome != decision.Limited {
			continue
		}
		if first {
			b = append(b, `,"limited_by":[`...)
		} else {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, s2b(r.Rule))
	}
	if !first {
		b = append(b, ']')
	}
	if rep.Blocked != "" {
		b = append(b, `,"blocked":`...)
		b = appendString(b, s2b(rep.Blocked))
	}
	return b
}

// decisionOf names what became of a request: passed, upstream_failed
// (passed, but the answer is sluice's own), limited, blocked,
// unauthenticated, bad_request, client_gone, the throttle's refusal
// (degraded, shed, queue_full, wait_too_long, upstream_backoff),
// store_error or unavailable (another 503 of sluice's own).
func decisionOf(v *decision.Verdict, resp *decision.Response) string {
	switch {
	case resp.Passed && resp.Failure == decision.NoFailure:
		return "passed"
	case resp.Passed:
		return "upstream_failed"
	case resp.Status == decision.StatusClientGone:
		return "client_gone"
	case resp.Status == fasthttp.StatusTooManyRequests:
		return "limited"
	case resp.Status == fasthttp.StatusForbidden:
		return "blocked"
	case resp.Status == fasthttp.StatusUnauthorized:
		return "unauthenticated"
	case resp.Status == fasthttp.StatusLoopDetected:
		return "loop"
	case resp.Status < 500:
		return "bad_request"
	case v != nil && v.Report.Refusal.String() != "":
		return v.Report.Refusal.String()
	case v != nil && v.Report.Err != nil:
		return "store_error"
	}
	return "unavailable"
}

// appendMillis appends d in milliseconds, to the microsecond.
func appendMillis(b []byte, d time.Duration) []byte {
	return strconv.AppendFloat(b, float64(d.Microseconds())/1000, 'f', -1, 64)
}

// appendString appends s as a JSON string: quotes, backslashes and
// control characters escaped, bytes that are not UTF-8 as U+FFFD.
func appendString(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c == 0x7f:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		case c < utf8.RuneSelf:
			b = append(b, c)
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		i++
	}
	return append(b, '"')
}

// s2b views s as bytes, never written to.
func s2b(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
