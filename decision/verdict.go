package decision

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/internal/problem"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// Verdict is the answer to one request, as plain values for the transport
// to write. It comes from a pool: everything in it (the slices and the
// bytes its Fields and Body hold included) is valid until Finish, which
// gives it back. A transport copies what it keeps longer.
type Verdict struct {
	// Pass is true when the request goes on to the service: with
	// ClientHeader set to Client (when not ""), without the Removed
	// headers, with Method and Path as cleaned, and with Header's fields
	// (the RateLimit headers) set on the response it gets.
	Pass bool
	// Status is the answer when the request does not pass: 400, 401,
	// 403, 429 or 503, with Header's fields and Body (problem+json);
	// StatusClientGone when the caller went away while it waited: answer
	// nothing. 0 when it passes.
	Status int
	// Header is the response header fields to set, in order (a later one
	// replaces an earlier of the same name): the whole answer's when the
	// request is refused (Retry-After, RateLimit, RateLimit-Policy,
	// Content-Type, Cache-Control, WWW-Authenticate), the RateLimit fields
	// to add to the service's response when it passes.
	Header []Field
	// Body is the refusal's application/problem+json body; nil when the
	// request passes.
	Body []byte
	// Client names the caller to the service (policy.ClientHeader): its
	// client id, "anonymous", or "" when the policy identifies nobody by
	// key (send no header then).
	Client string
	// Removed are the request's header fields a caller must not pass on,
	// named as Headers.Names spelled them: ClientHeader and the override
	// headers in any spelling, and other spellings of the access key's
	// and of the counted headers' names (policy.SameHeaderName). The
	// transport deletes them before passing the request on.
	Removed []string
	// Method and Path are the request's method and escaped path as the
	// rules matched them (policy.CanonicalMethod, policy.CleanPath), and
	// DecodedPath the path unescaped; Cleaned reports whether they differ
	// from the Request's. The service must receive these. Path is ""
	// when the path could not be cleaned (a 400).
	Method, Path, DecodedPath string
	Cleaned                   bool
	// Host is the request's host as rules matched it (policy.CleanHost);
	// "" when no rule matches on the host, or it could not be cleaned.
	Host string
	// Addr is the caller's address as counted: the peer's, or from the
	// forwarded header when the peer is a trusted proxy; the zero Addr
	// when the peer is unknown. PeerTrusted reports whether the peer is a
	// trusted proxy (whose forwarded header goes on).
	Addr        netip.Addr
	PeerTrusted bool
	// Report is what happened, as Options.OnDecision was told.
	Report Report

	e        *Engine
	ctx      context.Context
	req      Request
	legacy   bool     // the Settings' LegacyHeaders
	finished bool     // Finish ran
	names    []string // the request's field names (Headers.Names)
	vals     []string // scratch for Headers.Values
	buf      []byte   // the bytes of Header's values
	body     []byte   // Body's bytes
	detail   []byte   // a problem's detail, while it is written
	violated []string

	match      []int
	mreq       policy.Request // what the rules are matched against
	reqs       []store.Request
	index      []int // rule index of each request
	leaseIndex []int // rule index of each concurrency rule to decide
	leaseKeys  []store.Key
	headers    []ruleHeader
	resA       []store.Result // the store's results, when it appends them (Engine.decideAll)
	after      []afterStep    // run by Finish (after.go)
	slot       slotStep       // the request's throttle slot (protect.go)
	leases     leaseStep      // the leases the request holds (lease.go)
	settle     settleStep     // the reservations to settle (settle.go)
	resp       Response       // what Finish gives the steps
}

// start readies a pooled v for req.
func (v *Verdict) start(e *Engine, ctx context.Context, req Request) {
	if req.Header == nil {
		req.Header = noHeaders{}
	}
	v.e, v.ctx, v.req, v.finished = e, ctx, req, false
	v.Pass, v.Status, v.Client, v.Cleaned = false, 0, "", false
	v.Method, v.Path, v.DecodedPath, v.Host = "", "", "", ""
	v.Addr, v.PeerTrusted = netip.Addr{}, false
	v.Report = Report{Rules: v.Report.Rules[:0]}
	v.Header, v.Body, v.Removed = v.Header[:0], nil, v.Removed[:0]
	v.buf, v.violated = v.buf[:0], v.violated[:0]
}

// Request returns the request v decided.
func (v *Verdict) Request() *Request { return &v.req }

// NeedsResponse reports whether Finish has after steps that read the
// Response (leases, a throttle slot, costs to settle) or an
// Options.OnResponse to call: without them, a transport may pass nil
// and need not record the answer.
func (v *Verdict) NeedsResponse() bool { return len(v.after) > 0 || v.e.opts.OnResponse != nil }

// Finish runs v's after steps once the request is answered: it gives back
// the request's leases and throttle slot (with the response's outcome),
// settles reserved costs (count, cost_header), calls Options.OnResponse,
// and gives v back to the pool. resp is what the service answered (read
// during the call, not kept); nil for a request v refused (or one the
// transport did not pass on after all), or one passed whose answer nothing
// reads (NeedsResponse is false). Call it exactly once per Verdict, also
// when a handler panics (as Aborted); v must not be used after it (a
// second call panics while the pool has not handed v out again). Steps
// run last taken first: the throttle slot is given back before the
// store's round trips to release leases and settle costs.
func (v *Verdict) Finish(resp *Response) {
	if v.finished {
		panic("decision: Verdict.Finish called twice")
	}
	v.finished = true
	if resp == nil {
		v.resp = Response{Status: v.Status}
	} else {
		v.resp = *resp // a copy in the pool: resp does not escape to the steps
	}
	if v.resp.Header == nil {
		v.resp.Header = noHeaders{}
	}
	defer v.recycle()
	v.runSteps(v.after, &v.resp)
	if v.e.opts.OnResponse != nil {
		v.e.opts.OnResponse(&v.req, &v.resp)
	}
}

// runSteps runs steps last first, the rest deferred so that they run even
// if one panics (each gives back something of its own); the panic goes on
// after them.
func (v *Verdict) runSteps(steps []afterStep, resp *Response) {
	n := len(steps)
	if n == 0 {
		return
	}
	defer v.runSteps(steps[:n-1], resp)
	steps[n-1].after(v, resp)
}

// recycle clears what v holds of its request and puts it in the pool.
func (v *Verdict) recycle() {
	e := v.e
	clear(v.after) // no step outlives its request
	v.after = v.after[:0]
	clear(v.names)
	clear(v.vals)
	clear(v.Removed)
	clear(v.reqs)
	clear(v.resA)
	clear(v.leaseKeys)
	clear(v.Header)
	v.req, v.ctx, v.e, v.resp = Request{}, nil, nil, Response{}
	v.mreq.Header = nil
	v.Report.Err, v.Report.Counted = nil, ""
	e.pool.Put(v)
}

// values returns the values of the request's field name, in scratch
// memory that the next call reuses.
func (v *Verdict) values(name string) []string {
	v.vals = v.req.Header.Values(v.vals[:0], name)
	return v.vals
}

// remove adds name to Removed, once.
func (v *Verdict) remove(name string) {
	if !slices.Contains(v.Removed, name) {
		v.Removed = append(v.Removed, name)
	}
}

// scrub lists in Removed the fields a caller must not pass on, in every
// spelling an upstream may read as the same (policy.SameHeaderName):
// ClientHeader, which only sluice writes; the override headers, which
// would make the upstream serve another method or path than the one
// counted (policy.RemovedHeader); and every spelling of the key header
// (pol.KeyName, "" when the policy reads no key) and of a header rules
// match on (pol.MatchHeaderNames) other than the name itself, which the
// upstream might take for the field sluice did not see.
func (v *Verdict) scrub(pol *policy.Compiled) {
	key, matched := pol.KeyName(), pol.MatchHeaderNames()
	v.names = v.req.Header.Names(v.names[:0])
	for _, k := range v.names {
		if key != "" && respelled(k, key) || policy.RemovedHeader(k) {
			v.remove(k)
			continue
		}
		for _, name := range matched {
			if respelled(k, name) {
				v.remove(k)
			}
		}
	}
}

// respelled reports whether the field name k is another spelling of the
// canonical name (X_Env for X-Env), not name itself in another case.
func respelled(k, name string) bool {
	return !strings.EqualFold(k, name) && policy.SameHeaderName(k, name)
}

// clean sets Method and Path as rules match them and the service
// receives them (policy.CanonicalMethod, policy.CleanPath), and Host
// when a rule of pol matches on it (policy.CleanHost). It fails with a
// *policy.PathError when the path has no one reading, a
// *policy.HostError when the host has none (or there is none to match,
// unless Request.HostOptional).
func (v *Verdict) clean(pol *policy.Compiled) error {
	v.Method = policy.CanonicalMethod(v.req.Method)
	esc, dec, err := policy.CleanPath(v.req.Path)
	if err != nil {
		v.Path, v.DecodedPath, v.Cleaned = "", "", false
		return err
	}
	v.Path, v.DecodedPath = esc, dec
	v.Cleaned = v.Method != v.req.Method || esc != v.req.Path
	if pol.MatchesHost() {
		if v.Host, err = policy.CleanHost(v.req.Host); err != nil {
			return err
		}
		if v.Host == "" && !v.req.HostOptional {
			return errNoHost
		}
	}
	return nil
}

// errNoHost refuses a request without a host when rules match on it:
// the upstream would serve it as some host that no rule saw.
var errNoHost = &policy.HostError{Reason: "none: rules match requests by their host (send Host)"}

// matchRules sets v.match to the rules that match the cleaned request.
func (v *Verdict) matchRules(pol *policy.Compiled) {
	m := &v.mreq
	m.Method, m.Path, m.Host, m.Header = v.Method, v.DecodedPath, v.Host, v.req.Header
	v.match = pol.MatchRequest(m, v.match[:0])
}

// setField adds the field name with the value v.buf[from:].
func (v *Verdict) setField(name string, from int) {
	n := len(v.buf)
	v.Header = append(v.Header, Field{Name: name, Value: v.buf[from:n:n]})
}

// retryAfter adds Retry-After for a wait of d (retryAfterSeconds).
func (v *Verdict) retryAfter(d time.Duration) { v.intField("Retry-After", retryAfterSeconds(d)) }

// answer makes v a refusal with p, its detail in v.detail: status, the
// problem+json body and its fields.
func (v *Verdict) answer(p problem.Problem) {
	v.Pass, v.Status = false, p.Status
	p.Detail = v.detail
	p.ViolatedPolicies = v.violated
	v.body = p.AppendJSON(v.body[:0])
	v.Body = v.body
	v.Header = append(v.Header, Field{Name: "Content-Type", Value: problemType}, Field{Name: "Cache-Control", Value: noStore})
}

var (
	problemType = []byte("application/problem+json")
	noStore     = []byte("no-store")
)

// badRequest answers 400 for a request sluice cannot count one way only.
// Nothing is counted.
func (v *Verdict) badRequest(detail string) {
	v.Report.Status = statusBadRequest
	v.detail = append(v.detail[:0], detail...)
	v.answer(problem.Problem{Title: "Bad Request", Status: statusBadRequest})
}

// pathDetail is the problem detail of a path clean refused.
func pathDetail(err error) string {
	if pe, ok := err.(*policy.PathError); ok {
		return "the request path cannot be read one way only: it has " + pe.Reason
	}
	if he, ok := err.(*policy.HostError); ok {
		return "the request's host cannot be read one way only: it has " + he.Reason
	}
	return err.Error()
}

// Origin is the transport's own value of the request v decides
// (Request.Origin), for the transport's use once it has the Verdict.
func (v *Verdict) Origin() any { return v.req.Origin }
