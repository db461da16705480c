package decision

import (
	"context"
	"net/netip"
	"time"

	"github.com/sluice-rl/sluice/policy"
)

// Headers reads a request's (or a response's) header fields, whatever the
// transport keeps them in: net/http's map, fasthttp's byte slices, an Envoy
// descriptor list. An implementation must not copy what it can hand over:
// the Engine calls it a few times per request and keeps nothing it
// returns beyond the request's Verdict.
type Headers interface {
	// Values appends to dst the value of every field line named name and
	// returns the extended slice; none when there is none. name is in
	// canonical form (textproto.CanonicalMIMEHeaderKey: X-Api-Key); an
	// implementation matches it as its transport matches names (net/http:
	// exactly, its keys being canonical; fasthttp: ignoring case). Field
	// lines sent twice are two values: that is how the Engine tells that a
	// key was sent twice.
	Values(dst []string, name string) []string
	// Names appends to dst the name of every field the request carries,
	// spelled as the transport keeps it: Verdict.Removed gives names back
	// in this spelling, for the transport to delete. A name may be listed
	// more than once (once per field line will do: making them unique
	// costs a transport a search quadratic in what the caller sent; the
	// Engine lists each in Removed once). The Engine reads them to find
	// other spellings of the names it counts by (policy.SameHeaderName:
	// X_Api_Key for X-Api-Key).
	Names(dst []string) []string
}

// Request is what the Engine decides: the request as the caller sent it,
// taken from whatever the transport received (a request line, an
// X-Original-URI header, an Envoy descriptor).
type Request struct {
	// Method is the request's method as sent; the Engine matches rules by
	// its canonical spelling (policy.CanonicalMethod).
	Method string
	// Path is the request's path as sent, escaped, without the query: a
	// request line's path, or the path part of X-Original-URI. "" reads
	// as "/". The Engine matches rules by its clean form (policy.CleanPath)
	// and refuses, 400, a path that has more than one reading.
	Path string
	// Host is the host the request is for, as the transport read it: the
	// authority of an absolute-form request target when it has one (RFC
	// 9112 section 3.2.2), else its Host field (HTTP/2's :authority);
	// with or without a port. "" when it names none. The Engine matches
	// rules by its clean form (policy.CleanHost) and refuses, 400, a host
	// that has none, or none at all when a rule matches on the host
	// (unless HostOptional).
	Host string
	// HostOptional makes a request with no Host one that rules matching
	// on the host (match.host) do not match, while every other rule still
	// applies, instead of a 400. A transport sets it when a request's host
	// is only known if its sender chose to pass it on, as Envoy's rate
	// limit service gets it from a descriptor entry: there the service's
	// own request always had a host, which sluice was not told. A gateway
	// leaves it unset, since its upstream would serve a request without a
	// host as some host no rule saw.
	HostOptional bool
	// Peer is the address of the connection's other end, parsed once by
	// the transport; the zero value when it has none or cannot read it
	// (the caller is then counted as "caller", with no address).
	Peer netip.AddrPort
	// Header reads the request's header fields. Nil reads as no fields.
	Header Headers
	// Cert is the client certificate the connection's TLS handshake
	// verified, nil without one. A certificate that names a client
	// (policy.Compiled.CallerByCert) makes the caller that client; an
	// access key sent beside it must be the same client's (else 400). A
	// transport makes it once per connection (policy.NewPeerCert); the
	// Engine matches it under the policy in force at each request.
	Cert *policy.PeerCert
	// Key, if set, gives the key rule counts this request by, in place of
	// the rule's own (policy.Rule.Key): requests with the same key count
	// together on that rule, whoever sent them. ok false leaves the rule's
	// own key in force. It is called once per matching rule that counts;
	// a transport sets it from its own hook (httplimit.Options.Key). Nil:
	// every rule counts by its own key.
	Key func(rule string) (key string, ok bool)
	// Ready, if set, is called once the rules have passed the request and
	// before Settings.Throttle is asked for its slot (never without a
	// Throttle): a transport reads the request's body there, so that a
	// caller's upload never holds a slot of the service. Its answer says
	// how the request goes on (Readiness). Nil: it takes its slot.
	Ready func() Readiness
	// Origin is the transport's own request, handed back to its callbacks
	// (Options.OnDecision, OnResponse, OnSettle) and never read by the
	// Engine: httplimit's *http.Request.
	Origin any
}

// Readiness is what a transport's Request.Ready found of the request's
// body.
type Readiness uint8

// The answers of Request.Ready.
const (
	// BodyRead: the body has been read whole (or there is none); the
	// request takes a slot of the Throttle, waits for one, or is refused.
	BodyRead Readiness = iota
	// BodyStreams: the body is too large to read first; the request passes
	// without a slot of the Throttle, its upload streaming to the service.
	// The transport bounds how many do at once.
	BodyStreams
	// BodyFailed: the body broke off, came too slowly or was malformed.
	// The request does not pass; its Status is StatusClientGone and the
	// transport answers it itself.
	BodyFailed
)

// Field is one response header field to set, in canonical form.
type Field struct {
	Name  string
	Value []byte
}

// Response is what the protected service answered, known after it did:
// what the after steps of a request (give back leases and a throttle
// slot, settle reserved costs) and Options.OnResponse are given by
// Verdict.Finish.
type Response struct {
	// Passed is false when the request was refused (the Verdict did not
	// pass) and the service never saw it.
	Passed bool
	// Status is the final status of the answer (the Verdict's own when it
	// did not pass).
	Status int
	// Header reads the answer's header fields: a cost_header rule's
	// cost, an upstream 429's or 503's Retry-After for the throttle. Nil
	// reads as none.
	Header Headers
	// Latency is the time from passing the request on to the end of its
	// answer, on the Engine's clock.
	Latency time.Duration
	// FirstByte is the time from passing the request on to the answer's
	// status: the service's own latency, whatever the caller's reading
	// speed. Latency when nothing was written.
	FirstByte time.Duration
	// Aborted is true when the caller went away before the answer ended,
	// or the transport's handler broke off (a panic).
	Aborted bool
	// Unanswered is true when the request was Aborted before any status
	// was written: the service may have done the work, so a reserved cost
	// stands.
	Unanswered bool
	// Failure is why the answer is the transport's own and not the
	// service's (no answer, or too late), NoFailure otherwise.
	Failure Failure
}

// Failure says why the answer to a passed request is not the protected
// service's.
type Failure uint8

// The failures a transport reports in Response.Failure.
const (
	NoFailure       Failure = iota
	UpstreamFailed          // no answer: connection refused, reset, bad response
	UpstreamTimeout         // no answer in time
	CallerFailed            // the caller's side broke (its body broke off or was too slow)
)

// noHeaders is the Headers of a request or response without any.
type noHeaders struct{}

func (noHeaders) Values(dst []string, _ string) []string { return dst }
func (noHeaders) Names(dst []string) []string            { return dst }

// ctxOr returns ctx, or context.Background() for nil.
func ctxOr(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}
