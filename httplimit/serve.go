package httplimit

import (
	"net/http"
	"net/netip"
	"strconv"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/nethttp"
	"github.com/sluice-rl/sluice/policy"
)

// peerCert is the client certificate r's TLS handshake verified (a
// server whose tls.Config has ClientAuth VerifyClientCertIfGiven or
// RequireAndVerifyClientCert), nil without. It is read at each request (a
// digest of the certificate): only for a policy whose clients list
// certificates.
func peerCert(r *http.Request) *policy.PeerCert {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.PeerCertificates) == 0 {
		return nil
	}
	return policy.NewPeerCert(r.TLS.PeerCertificates[0])
}

// serve decides r under set and passes it to next, then tells the Engine
// how it was answered (Verdict.Finish). Without after steps and without
// Options.OnResponse the handler gets w itself: nothing is recorded.
func (l *Limiter) serve(w http.ResponseWriter, r *http.Request, set *Settings, next http.Handler) {
	if l.opts.Skip != nil && l.opts.Skip(r) {
		scrubSkipped(r.Header)
		next.ServeHTTP(w, r)
		return
	}
	peer, _ := netip.ParseAddrPort(r.RemoteAddr) // the zero AddrPort when it cannot be read: counted as "caller"
	// r.Host: net/http's server puts an absolute-form target's authority there, and refuses a second Host
	req := decision.Request{Method: r.Method, Path: r.URL.EscapedPath(), Host: r.Host, Peer: peer, Header: nethttp.Header(r.Header), Origin: r}
	if set.Policy.IdentifiesByCert() {
		req.Cert = peerCert(r)
	}
	if key := l.opts.Key; key != nil {
		req.Key = func(rule string) (string, bool) { return key(r, rule) }
	}
	v := l.engine.Decide(r.Context(), decision.Settings{Policy: set.Policy, LegacyHeaders: set.LegacyHeaders, Throttle: set.Throttle}, req)
	finished := false
	defer func() {
		if !finished { // OnDecision panicked: give back what the request took; the panic goes on
			l.finishRefused(w, r, v, &Response{Status: http.StatusInternalServerError, Header: w.Header(), Aborted: true})
		}
	}()
	for _, name := range v.Removed {
		delete(r.Header, name)
	}
	r = cleaned(r, v)
	if l.opts.OnDecision != nil {
		l.opts.OnDecision(r, &v.Report)
	}
	if !v.Pass {
		status := l.writeAnswer(w, r, v)
		finished = true
		l.finishRefused(w, r, v, &Response{Status: status, Header: w.Header()})
		return
	}
	nethttp.SetFields(w.Header(), v.Header)
	if v.Client != "" {
		r.Header[ClientHeader] = []string{v.Client}
	}
	finished = true
	if !v.NeedsResponse() && l.opts.OnResponse == nil {
		v.Finish(nil) // nothing reads the answer
		next.ServeHTTP(w, r)
		return
	}
	l.passRecorded(w, r, v, next)
}

// cleaned returns r with the method and path that rules matched and the
// handler receives (Verdict.Method, Path): r itself when they are spelled
// so already, else a shallow copy of r with its own URL, and a RequestURI
// (when r has one) to match, so that a handler that proxies by RequestURI
// sends on what was counted.
func cleaned(r *http.Request, v *decision.Verdict) *http.Request {
	if !v.Cleaned {
		return r
	}
	c := *r
	u := *r.URL
	u.Path, u.RawPath = v.DecodedPath, v.Path
	c.URL, c.Method = &u, v.Method
	if r.RequestURI != "" {
		c.RequestURI = u.RequestURI()
	}
	return &c
}

// writeAnswer writes the Verdict's refusal, by Options.Reject when it is
// set, and returns the status written: nothing for a caller that went
// away.
func (l *Limiter) writeAnswer(w http.ResponseWriter, r *http.Request, v *decision.Verdict) int {
	if v.Status == StatusClientGone {
		return v.Status
	}
	if l.opts.Reject != nil {
		ref := Refusal{Status: v.Status, RetryAfter: v.Report.RetryAfter, Report: &v.Report, Problem: v.Body}
		return l.reject(w, r, &ref, v.Header)
	}
	h := w.Header()
	nethttp.SetFields(h, v.Header)
	h["Content-Length"] = []string{strconv.Itoa(len(v.Body))}
	w.WriteHeader(v.Status)
	_, _ = w.Write(v.Body)
	return v.Status
}

// finishRefused finishes a request the handler never saw: the Verdict's
// after steps, then Options.OnResponse with resp.
func (l *Limiter) finishRefused(w http.ResponseWriter, r *http.Request, v *decision.Verdict, resp *Response) {
	d := decision.Response{Status: resp.Status, Header: nethttp.Header(w.Header()), Aborted: resp.Aborted}
	v.Finish(&d)
	if l.opts.OnResponse != nil {
		l.opts.OnResponse(r, resp)
	}
}
