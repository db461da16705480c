package decision

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"time"

	"github.com/sluice-rl/sluice/internal/problem"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/throttle"
)

// throttleRequest is what the Throttle and the Pressure know of a request
// the per-caller rules allowed. Its priority is the highest of its matched
// rules' that set one (exempt ones too: an allow list exempts from
// counting, not from a class), Normal when none does, raised to its
// plan's; it degrades if any matched rule does. A caller known only by
// address is named by it, so that queuing is fair between such callers.
func (v *Verdict) throttleRequest(pol *policy.Compiled, caller *policy.Caller, addr netip.Addr) throttle.Request {
	req := throttle.Request{Priority: throttle.Normal, Client: v.Client}
	set := false
	for _, i := range v.match {
		rule := pol.Rule(i)
		if p := rule.Priority; p != nil && (!set || *p > req.Priority) {
			req.Priority, set = *p, true
		}
		req.Degrade = req.Degrade || rule.Degrade
	}
	req.Priority = caller.Priority(req.Priority)
	if v.Client == "" || v.Client == policy.AnonymousPlan {
		req.Client = addr.String()
	}
	return req
}

// protect puts a request the per-caller rules allowed through the
// Settings' Pressure (pressed), then through their Throttle (admit) once
// its body is read (Request.Ready), leaving v.Pass set.
func (e *Engine) protect(v *Verdict, set *Settings, pol *policy.Compiled, caller *policy.Caller, addr netip.Addr) {
	st := set.Pressure.current()
	if st == nil && set.Throttle == nil {
		return
	}
	req := v.throttleRequest(pol, caller, addr)
	if v.pressed(st, req) {
		return // a refusal gives the leases back in their after step
	}
	if set.Throttle == nil {
		return
	}
	switch v.ready() {
	case BodyRead:
		v.Pass = e.admit(v, set.Throttle, req)
	case BodyFailed:
		v.Pass, v.Report.Status = false, StatusClientGone // the transport answers
	}
}

// admit asks thr for a slot for req, a request the per-caller rules
// allowed (throttleRequest). A refusal is answered 503 with Retry-After
// and a problem naming what is full; a caller that went away while it
// waited is answered nothing, one whose wait the server cancelled (its
// context's cause not context.Canceled) 503. An admitted request's slot
// is released by Finish, with the upstream's outcome.
func (e *Engine) admit(v *Verdict, thr *throttle.Throttle, req throttle.Request) bool {
	d := thr.Acquire(v.ctx, req)
	rep := &v.Report
	rep.Throttled, rep.Priority, rep.Refusal, rep.QueueWait = true, req.Priority, d.Reason, d.Waited
	if d.Admitted {
		v.slot = slotStep{d: d}
		v.after = append(v.after, &v.slot)
		return true
	}
	if d.Reason == throttle.ReasonCanceled && errors.Is(context.Cause(v.ctx), context.Canceled) {
		rep.Status = StatusClientGone // net/http's cause when the caller leaves: nobody reads an answer
		return false
	}
	// Every other refusal, a wait the server cancelled included (a
	// gateway's drain ending, a deadline: the caller waits for an answer).
	rep.Status, rep.RetryAfter = statusUnavailable, d.RetryAfter
	v.intField("Retry-After", int64(d.RetryAfterSeconds()))
	v.refusalDetail(d)
	v.answer(problem.Problem{Title: "Service Unavailable", Status: statusUnavailable, Reason: d.Reason.String()})
	return false
}

// ready is what the transport found of v's body once the rules passed
// it (Request.Ready): BodyRead when it has no Ready.
func (v *Verdict) ready() Readiness {
	if v.req.Ready == nil {
		return BodyRead
	}
	return v.req.Ready()
}

// slotStep releases a request's throttle slot after the response, with the
// upstream's outcome.
type slotStep struct{ d throttle.Decision }

func (st *slotStep) after(v *Verdict, resp *Response) {
	st.d.Release(throttleOutcome(resp, v.e.opts.Clock.Now()))
	st.d = throttle.Decision{}
}

// throttleOutcome maps a Response onto what the throttle learns from it:
// the latency is the time to the status (FirstByte), so that a caller
// reading its answer slowly is no slow upstream to the adaptive limit; an
// answer of the transport's own (Response.Failure) is a timeout or a failure, or
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
	case resp.Status == statusTooManyRequests || resp.Status == statusUnavailable:
		var room [1]string
		if vs := resp.Header.Values(room[:0], "Retry-After"); len(vs) > 0 {
			o.RetryAfter = parseRetryAfter(vs[0], now)
		}
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
	for _, layout := range httpDates {
		if t, err := time.Parse(layout, v); err == nil {
			if t.After(now) {
				return min(t.Sub(now), 24*time.Hour)
			}
			return 0
		}
	}
	return 0
}

// httpDates are the layouts of an HTTP date (RFC 9110 5.6.7), as
// net/http's ParseTime reads them: IMF-fixdate first, then the obsolete
// RFC 850 and asctime forms.
var httpDates = [...]string{"Mon, 02 Jan 2006 15:04:05 GMT", time.RFC850, time.ANSIC}
