package decision

// afterStep is one thing done once a request is answered: giving back a
// lease or a throttle slot, settling a reserved cost. A step is a field of
// the request's Verdict, appended to Verdict.after while deciding, so that
// adding one allocates nothing; it runs whether the request was passed on
// or refused later in the decision (resp.Passed). Verdict.Finish runs the
// steps last appended first, before Options.OnResponse.
type afterStep interface {
	after(v *Verdict, resp *Response)
}
