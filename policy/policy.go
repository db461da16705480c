// Package policy holds sluice's rules as plain Go values: who the clients are
// and how they are recognised, which plans they are on, which rules apply to
// which requests and what each rule counts by. A Go program builds a Policy
// in code (package config builds one from YAML) and compiles it once; the
// compiled policy answers, per request, which rules match and which limit
// each one applies to this caller. It knows no HTTP, no YAML and no store.
// The few facts about HTTP names it shares with the gateway's transport
// (HopByHop, SameHeaderName, CleanHost) live in internal/httpname, which
// both read.
package policy

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/throttle"
)

// The defaults Compile applies to fields left zero, defined here once
// (package config refers to them).
const (
	DefaultIPv6Prefix = 64
	DefaultKeyHeader  = "X-API-Key"
	DefaultAlgorithm  = limiter.SlidingWindow
	DefaultCost       = 1
	// MaxConcurrency is the largest Rule.Concurrency, as limiter.MaxRate
	// is the largest rate.
	MaxConcurrency = 1_000_000_000
)

// Policy is the whole set of rules. Every field is optional: a policy
// without Rules limits nothing (sluice's configuration file requires
// rules unless Envoy's rule files stand in for them).
type Policy struct {
	// TrustedProxies are the networks whose ForwardedHeader is believed
	// when a rule counts by IP. Default: none, so the peer address is
	// always the caller.
	TrustedProxies []netip.Prefix
	// ForwardedHeader is the one header the trusted proxies write the
	// caller's address in; the other is never read. Default XForwardedFor.
	ForwardedHeader ForwardedHeader
	// IPv6Prefix groups IPv6 callers by this many leading bits when
	// counting by IP (one household or host gets one /64). Default 64;
	// 128 counts every address apart.
	IPv6Prefix int
	// CaseInsensitivePaths matches rules' paths to request paths
	// regardless of case, for upstreams that route "/CLAIMS" to "/claims"
	// (Express, ASP.NET Core, IIS). Default false: paths are
	// case-sensitive, as Go, Spring, Django, Flask and Rails read them.
	CaseInsensitivePaths bool
	// Clients says how callers are recognised by access key.
	Clients Clients
	// Plans maps a plan name to its rate overrides.
	Plans map[string]Plan
	// Rules are applied in order; every matching rule decides and a request
	// passes only if all of them allow it.
	Rules []Rule
	// Location is the time zone the days and hours of every schedule are
	// read in (Rule.Schedule, Plan.Schedule). Default, nil: UTC.
	Location *time.Location
}

// ForwardedHeader names the header trusted proxies write the caller's
// address in. Only one is read: a proxy that appends to one of them passes
// the other on from the client untouched, so believing both would let a
// client choose its own address.
type ForwardedHeader uint8

const (
	// XForwardedFor is X-Forwarded-For, which nginx, HAProxy, Envoy and
	// most cloud load balancers append to (the default).
	XForwardedFor ForwardedHeader = iota
	// Forwarded is the for= parameters of Forwarded (RFC 7239).
	Forwarded
)

// String returns the header's name: "X-Forwarded-For" or "Forwarded".
func (h ForwardedHeader) String() string {
	switch h {
	case XForwardedFor:
		return "X-Forwarded-For"
	case Forwarded:
		return "Forwarded"
	}
	return fmt.Sprintf("ForwardedHeader(%d)", h)
}

// Clients says how callers are recognised by access key.
type Clients struct {
	// KeyHeader is the request header carrying the access key. Default
	// "X-API-Key".
	KeyHeader string
	// Unknown says what happens to a request without a known key.
	Unknown Unknown
	// List holds the known clients.
	List []Client
}

// Unknown is the treatment of callers without a known access key.
type Unknown uint8

const (
	// UnknownReject answers 401 and counts nothing (the default when there
	// are clients).
	UnknownReject Unknown = iota
	// UnknownAnonymous counts unknown callers by IP under the plan
	// "anonymous".
	UnknownAnonymous
)

// AnonymousPlan is the plan unknown callers are on with UnknownAnonymous.
const AnonymousPlan = "anonymous"

// Client is one known caller.
type Client struct {
	// ID names the client in metrics, logs and X-Sluice-Client; never the key.
	ID string
	// Keys are the access keys that identify the client.
	Keys []string
	// Certs are the client certificates that identify the client, when
	// the gateway verifies its callers' certificates (tls.client_ca): a
	// caller whose certificate one of them matches is this client
	// (CallerByCert). A client needs Keys, Certs or both.
	Certs []CertSelector
	// Plan names the client's plan; empty means the rules' own rates.
	Plan string
	// Limits overrides rates for this client by rule name; it beats the plan.
	Limits map[string]Rate
	// Concurrency overrides concurrency rules' Concurrency for this client
	// by rule name; it beats the plan.
	Concurrency map[string]int64
}

// Plan is a named set of overrides by rule name (Limits for rate rules,
// Concurrency for concurrency rules), and the priority its clients'
// requests get at least.
type Plan struct {
	Limits      map[string]Rate
	Concurrency map[string]int64
	// Priority, when set, raises the priority of its clients' requests
	// (tenants with a higher service level first when the service is
	// full): a request's priority is the highest of its matched rules'
	// and this one. nil: the rules' alone. A plan never lowers a priority.
	Priority *throttle.Priority
	// Schedule replaces Limits' rates and Priority by the day and the hour
	// (schedule.go): the first entry in force applies. A rule one of its
	// entries names counts the plan's callers apart from the rule's own
	// callers at every hour, as an override in Limits does.
	Schedule []PlanScheduleEntry
}

// Rate is N requests per Period.
type Rate struct {
	N      int64
	Period time.Duration
}

// String formats r as configuration does: 100/m, 5/s, 100/30s.
func (r Rate) String() string {
	switch r.Period {
	case time.Second:
		return fmt.Sprintf("%d/s", r.N)
	case time.Minute:
		return fmt.Sprintf("%d/m", r.N)
	case time.Hour:
		return fmt.Sprintf("%d/h", r.N)
	case 24 * time.Hour:
		return fmt.Sprintf("%d/d", r.N)
	}
	return fmt.Sprintf("%d/%s", r.N, shortDuration(r.Period))
}

// shortDuration writes d as time.Duration does, without the zero units it
// ends in: 15m, not 15m0s; 2h, not 2h0m0s (time.ParseDuration reads both).
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// Rule is one limit applied to the requests it matches.
type Rule struct {
	// Name identifies the rule in headers, metrics and overrides.
	Name string
	// Match selects the requests the rule applies to.
	Match Match
	// Key is what the rule counts by.
	Key KeySpec
	// Algorithm is the rate-limiting algorithm. Default sliding_window.
	Algorithm limiter.Algorithm
	// Rate is the rule's rate, unless the caller's plan or the caller
	// overrides it. The zero Rate counts nothing: the rule limits
	// requests in flight (Concurrency) or only classifies the requests it
	// matches (Priority, Degrade).
	Rate Rate
	// Concurrency, above 0, makes the rule a concurrency rule instead of a
	// rate rule: at most Concurrency slots of a caller's requests in flight
	// at once, each request holding Cost slots from its admission until
	// its response ends, unless the caller's plan or the caller overrides
	// it (Plan.Concurrency, Client.Concurrency). It is decided after the
	// rate rules have allowed the request. A concurrency rule has no Rate,
	// Algorithm or Burst.
	Concurrency int64
	// Burst is the bucket size for token_bucket, gcra and leaky_bucket
	// (0: the rate's N). An override of the rate scales it in proportion.
	// The window algorithms ignore it.
	Burst int64
	// Cost is the units one request consumes; 0 means the default, 1.
	Cost int64
	// Delay, for token_bucket, gcra and leaky_bucket, holds a request the
	// bucket has no room for, but would have within Delay, until its turn
	// instead of refusing it (limiter.Limit.WithDelay); at most
	// limiter.MaxDelay. 0, the default, refuses it at once. The window
	// algorithms take none.
	Delay time.Duration
	// Mode is enforce (the default) or shadow.
	Mode Mode
	// Allow lists client ids this rule never limits.
	Allow []string
	// AllowNets lists caller networks this rule never limits.
	AllowNets []netip.Prefix
	// Priority, when set, is the priority of the requests the rule
	// matches when the service is full (protect): a request's is the
	// highest of its matched rules' that set one, raised to its plan's;
	// throttle.Normal when none does. A rule without one (a catch-all
	// rate rule) does not make low-priority requests normal.
	Priority *throttle.Priority
	// Degrade marks the requests the rule matches as non-essential: they
	// are refused (503) while the service is at or above protect's
	// shed_from. Default false.
	Degrade bool
	// Count is which requests count, by their response (settle.go).
	// Default CountAll.
	Count Count
	// CostHeader, if set, is the response header in which the upstream
	// reports a request's actual cost: Cost is reserved when the request
	// is decided, and the difference refunded or charged after the
	// response. A value that is missing or not a whole number of 0 or
	// more leaves the reservation as it was.
	CostHeader string
	// Schedule replaces the rule's Rate, Burst, Priority or Degrade by
	// the day and the hour (schedule.go): the first entry in force
	// applies. A concurrency rule's schedule replaces only Priority and
	// Degrade; a plan's or a client's override of the rate still beats a
	// scheduled rate. Default none.
	Schedule Schedule
}

// Classifies reports whether r only classifies requests (priority,
// degrade) and counts nothing: it has neither a rate (the zero Rate) nor
// a Concurrency.
func (r *Rule) Classifies() bool { return r.Rate == (Rate{}) && r.Concurrency == 0 }

// LimitsInFlight reports whether r is a concurrency rule (Concurrency > 0).
func (r *Rule) LimitsInFlight() bool { return r.Concurrency > 0 }

// Match selects requests by host, path prefix (on segment boundaries),
// method and headers; every field left empty matches every request, and a
// request must match all that are set. Requests are cleaned first, so that
// no other spelling escapes a match (CleanPath, CanonicalMethod,
// CleanHost). CompileMatch compiles it into a Matcher.
type Match struct {
	// Host, if set, is the request's host: an exact name
	// ("api.example.com") or "*." and a name ("*.example.com"), which
	// matches every name below it, at any depth, and never the name itself
	// (as nginx's server_name does). Compared regardless of case, without
	// the port and one trailing dot; a name in Unicode is compared in its
	// ASCII form (punycode), as CleanHost reads the request's.
	Host string
	// Path is a path prefix; "/claims" matches /claims and /claims/7 but not
	// /claimsx. Empty or "/" matches every path. A segment "*" matches any
	// one segment: "/claims/*/documents" matches /claims/7/documents and
	// /claims/7/documents/2, not /claims/documents. Request paths are
	// cleaned first (CleanPath: "//claims/./7" and "/claims;x/7" are
	// "/claims/7"), so Path must be clean itself, in decoded form.
	Path string
	// Methods, if any, restricts the rule to these methods (upper case);
	// GET also covers HEAD. Request methods are upper-cased first.
	Methods []string
	// Headers, if any, must all be on the request: each with its exact
	// value, or with any value (HeaderMatch.Present). A header sent twice
	// or as a list matches when any of its values does.
	Headers []HeaderMatch
}

// KeyKind is what a rule counts by.
type KeyKind uint8

const (
	// KeyClient counts per client id (unknown callers, when admitted as
	// anonymous, per IP).
	KeyClient KeyKind = iota
	// KeyIP counts per caller IP address (IPv6 grouped by IPv6Prefix).
	KeyIP
	// KeyHeader counts per value of a request header.
	KeyHeader
	// KeyGlobal counts every request together.
	KeyGlobal
)

// KeySpec is what a rule counts by; Header names the header for KeyHeader,
// and Missing says how a KeyHeader rule counts a request without it.
type KeySpec struct {
	Kind    KeyKind
	Header  string
	Missing MissingHeader
}

// MissingHeader is how a header:NAME rule counts a request that does not
// carry the header (or carries it empty). The zero value is MissingShared.
type MissingHeader uint8

const (
	// MissingShared counts every request without the header on one counter
	// of the rule: leaving the header out is no way around the limit, and
	// all such requests together get one value's limit.
	MissingShared MissingHeader = iota
	// MissingIP counts a request without the header by the caller's IP
	// address, as key: ip does.
	MissingIP
	// MissingReject refuses a request without the header: 400, nothing
	// counted. A shadow rule refuses nothing: it reports the request
	// shadow_limited.
	MissingReject
)

// MissingHeaders lists the MissingHeader values, in the order of the constants.
var MissingHeaders = []MissingHeader{MissingShared, MissingIP, MissingReject}

// String returns the configuration name of m: shared, ip or reject.
func (m MissingHeader) String() string {
	switch m {
	case MissingIP:
		return "ip"
	case MissingReject:
		return "reject"
	}
	return "shared"
}

// String formats k as configuration does: client, ip, header:NAME, global.
func (k KeySpec) String() string {
	switch k.Kind {
	case KeyIP:
		return "ip"
	case KeyHeader:
		return "header:" + k.Header
	case KeyGlobal:
		return "global"
	}
	return "client"
}

// Mode says whether a rule rejects.
type Mode uint8

const (
	// Enforce rejects requests over the limit.
	Enforce Mode = iota
	// Shadow counts and reports requests over the limit but lets them pass.
	Shadow
)

// String returns "enforce" or "shadow".
func (m Mode) String() string {
	if m == Shadow {
		return "shadow"
	}
	return "enforce"
}
