package httplimit

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/throttle"
)

// admit asks the Settings' Throttle for a slot for a request the per-caller rules
// allowed. Its priority is the highest of its matched rules' that set one
// (exempt ones too: an allow list exempts from counting, not from a
// class), Normal when none does, raised to its plan's; it degrades if any matched rule does. A refusal is answered
// 503 with Retry-After and a problem naming what is full; a caller that
// went away while it waited is answered nothing, one whose wait the server
// cancelled (its context's cause not context.Canceled) 503. An admitted request's slot
// is released after the response, with the upstream's outcome.
func (l *Limiter) admit(w http.ResponseWriter, r *http.Request, thr *throttle.Throttle, pol *policy.Compiled, caller *policy.Caller, name string, addr netip.Addr, s *scratch) bool {
	req := throttle.Request{Priority: throttle.Normal, Client: name}
	set := false
	for _, i := range s.match {
		rule := pol.Rule(i)
		if p := rule.Priority; p != nil && (!set || *p > req.Priority) {
			req.Priority, set = *p, true
		}
		req.Degrade = req.Degrade || rule.Degrade
	}
	req.Priority = caller.Priority(req.Priority)
	if name == "" || name == policy.AnonymousPlan {
		req.Client = addr.String() // fair between callers known only by address
	}
	d := thr.Acquire(r.Context(), req)
	rep := &s.report
	rep.Throttled, rep.Priority, rep.Refusal, rep.QueueWait = true, req.Priority, d.Reason, d.Waited
	if d.Admitted {
		s.slot = slotStep{d: d}
		s.after = append(s.after, &s.slot)
		return true
	}
	if d.Reason == throttle.ReasonCanceled && errors.Is(context.Cause(r.Context()), context.Canceled) {
		rep.Status = StatusClientGone // net/http's cause when the caller leaves: nobody reads an answer
		return false
	}
	// Every other refusal, a wait the server cancelled included (a
	// gateway's drain ending, a deadline: the caller waits for an answer).
	rep.Status, rep.RetryAfter = http.StatusServiceUnavailable, d.RetryAfter
	w.Header()["Retry-After"] = []string{strconv.Itoa(d.RetryAfterSeconds())}
	writeProblem(w, problem{Title: "Service Unavailable", Status: http.StatusServiceUnavailable,
		Detail: refusalDetail(d) + "; retry in " + strconv.Itoa(d.RetryAfterSeconds()) + "s", Reason: d.Reason.String()})
	return false
}

// StatusClientGone is Report.Status for a request whose caller went away
// while it waited for a slot: nothing was answered (nginx's 499).
const StatusClientGone = 499

// refusalDetail names what is full.
func refusalDetail(d throttle.Decision) string {
	switch d.Reason {
	case throttle.ReasonDegraded:
		return "the service is busy: this non-essential feature is switched off while it is"
	case throttle.ReasonShed:
		return "the service is near its in-flight limit (" + strconv.Itoa(d.Limit) + "): low-priority requests are shed"
	case throttle.ReasonQueueFull:
		return "the service is at its in-flight limit (" + strconv.Itoa(d.Limit) + ") and its queue is full"
	case throttle.ReasonWaitTooLong:
		return "the service is at its in-flight limit (" + strconv.Itoa(d.Limit) + ") and the expected wait in its queue is too long"
	case throttle.ReasonUpstreamBackoff:
		return "the upstream service asked for a pause (its Retry-After)"
	case throttle.ReasonCanceled:
		return "the request was cancelled while it waited for a slot (the server is shutting down, or a deadline passed)"
	}
	return "the service is overloaded"
}

// slotStep releases a request's throttle slot after the response, with the
// upstream's outcome.
type slotStep struct{ d throttle.Decision }

func (st *slotStep) after(l *Limiter, _ *http.Request, resp *Response) {
	st.d.Release(throttleOutcome(resp, l.opts.Clock.Now()))
	st.d = throttle.Decision{}
}

// throttleOutcome maps a Response onto what the throttle learns from it:
// the latency is the time to the status (FirstByte), so that a caller
// reading its answer slowly is no slow upstream to the adaptive limit; an
// answer of the handler's own (NoteFailure) is a timeout or a failure, or
// nothing when the caller's side broke; the upstream's 429 or 503 brings
// its Retry-After.
func throttleOutcome(resp *Response, now time.Time) throttle.Outcome {
	o := throttle.Outcome{Status: resp.Status, Latency: max(resp.FirstByte, 1)} // 0 would mean "measure it yourself"
	switch {
	case !resp.Passed || resp.Aborted || resp.Failure == CallerFailed:
		o.Canceled = true
	case resp.Failure == UpstreamTimeout:
		o.Timeout = true
	case resp.Failure == UpstreamFailed:
		o.Failed = true
	case resp.Status == http.StatusTooManyRequests || resp.Status == http.StatusServiceUnavailable:
		o.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), now)
	}
	return o
}

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP date
// (RFC 9110 10.2.3). Anything else, or a time passed, is 0.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, int64(24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), 24*time.Hour)
	}
	return 0
}
