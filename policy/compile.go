package policy

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/textproto"
	"slices"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/throttle"
)

// FieldError is one thing wrong with a Policy. Path names the field the way
// configuration spells it ("rules[2].rate", "clients.list[0].plan",
// "plans.large.claims"), so that package config can point at its line.
type FieldError struct {
	Path string
	Msg  string
	// Name reports that the last part of Path, a name used as a mapping
	// key (the rule of a plan's or a client's override), is at fault
	// rather than the value under it.
	Name bool
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Msg }

// Compiled is a validated policy, ready to answer per request. It is
// immutable and safe for concurrent use.
type Compiled struct {
	src          Policy
	rules        []compiledRule
	matchers     []Matcher // by rule index, apart from rules: Match reads only them
	byKey        map[string]*Caller
	byCert       map[CertSelector]certEntry
	byID         map[string]*Caller
	anonymous    *Caller
	global       *Caller
	ipv6Bits     int
	settles      bool     // a rule settles after the response (settle.go)
	keyName      string   // KeyName, once per policy
	byHost       bool     // a rule matches on the host (MatchesHost)
	matchHeaders []string // MatchHeaderNames
	loc          *time.Location
	scheduled    bool      // a rule or a plan has a schedule (schedule.go)
	base         *Compiled // for a policy At compiled: the policy as written

	// The runtime overrides in force (override.go): plain is the policy
	// without them (nil when c is that policy), overrides those
	// WithOverrides applied, addrs those of address ranges (nil for none).
	plain     *Compiled
	overrides []Override
	addrs     *addrOverrides
}

type compiledRule struct {
	Rule
	match      Matcher
	allowIDs   map[string]bool
	headerName string // HeaderName, once per policy
	costName   string // CostHeaderName, once per policy
}

// Caller is a recognised client (or the anonymous caller), with the limit
// each rule applies to it.
type Caller struct {
	// ID is the client id, "" for callers not recognised by key.
	ID string
	// Plan is the caller's plan name.
	Plan     string
	priority *throttle.Priority // the plan's, if it sets one
	limits   []limiter.Limit    // by rule index; zero for concurrency rules
	inFlight []int64            // by rule index: a concurrency rule's limit
	sources  []string           // by rule index: LimitSource

	// What runtime overrides of the client set (override.go): shown, by
	// rule index, an override's Source ("" where none; nil without any),
	// and a block.
	shown      []string
	blocked    bool
	blockUntil time.Time
}

// StateTag returns a short text that state keys of rule i include for the
// caller: the name of the limit's algorithm, such as "gcra", or
// "concurrency" for a concurrency rule. It names
// neither the rate nor the burst, so that a key keeps its counters when a
// reload or another plan changes them (the stores reinterpret the state
// under the new limit, limiter.Reinterpret); a changed algorithm is
// another key, whose state starts fresh.
func (c *Caller) StateTag(i int) string {
	if c.inFlight[i] != 0 {
		return "concurrency"
	}
	return c.limits[i].Algorithm().String()
}

// LimitSource names where the caller's limit of rule i comes from: "" for
// the rule's own rate, "plan:NAME" for the override of the caller's plan,
// "client:ID" for the client's own override. A rule that counts callers
// together (by IP, a header's value or globally) keeps one counter per
// source, so callers on different limits never share a counter whose
// limit would change with every request, while a reload that changes a
// rate keeps each source's counter. A runtime override changes neither
// the key nor LimitSource (see Source).
func (c *Caller) LimitSource(i int) string { return c.sources[i] }

// Limit returns the limit rule i applies to the caller, a runtime
// override of its client included (an address's: Compiled.LimitAt); the
// zero Limit for a concurrency rule (see Concurrency).
func (c *Caller) Limit(i int) limiter.Limit { return c.limits[i] }

// Priority returns the priority of the caller's request whose matched
// rules' highest priority is p: p, raised to the caller's plan's priority
// if that is higher. A plan never lowers a priority.
func (c *Caller) Priority(p throttle.Priority) throttle.Priority {
	if c.priority != nil && *c.priority > p {
		return *c.priority
	}
	return p
}

// Concurrency returns how many slots in flight concurrency rule i allows
// the caller, or 0 if rule i is a rate rule.
func (c *Caller) Concurrency(i int) int64 { return c.inFlight[i] }

// Compile validates p and prepares it for lookups. It reports every problem
// at once, as FieldErrors joined with errors.Join.
func Compile(p Policy) (*Compiled, error) { return compile(p, nil) }

// compile is Compile; with base set it compiles the policy in force at
// an instant (At: base's entries applied to p), whose schedules base has
// checked.
func compile(p Policy, base *Compiled) (*Compiled, error) {
	p = clonePolicy(p)
	c := &Compiled{src: p, byKey: map[string]*Caller{}, byCert: map[CertSelector]certEntry{}, byID: map[string]*Caller{}, ipv6Bits: p.IPv6Prefix,
		loc: p.Location, scheduled: hasSchedule(p), base: base}
	if c.loc == nil {
		c.loc = time.UTC
	}
	if c.ipv6Bits == 0 {
		c.ipv6Bits = DefaultIPv6Prefix
	}
	var errs []error
	fail := func(path, format string, args ...any) {
		errs = append(errs, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	if c.ipv6Bits < 1 || c.ipv6Bits > 128 {
		fail("ipv6_prefix", "%d out of range (1 to 128)", p.IPv6Prefix)
	}
	if p.ForwardedHeader != XForwardedFor && p.ForwardedHeader != Forwarded {
		fail("forwarded_header", "%v is not a known header (XForwardedFor or Forwarded)", p.ForwardedHeader)
	}
	if c.IdentifiesByKey() {
		c.keyName = textproto.CanonicalMIMEHeaderKey(c.KeyHeader())
	}
	names := map[string]int{}
	for i, r := range p.Rules {
		c.rules = append(c.rules, compileRule(i, r, p.CaseInsensitivePaths, names, fail))
	}
	for i := range c.rules {
		m := &c.rules[i].match
		c.matchers = append(c.matchers, *m)
		c.byHost = c.byHost || m.MatchesHost()
		for _, name := range m.HeaderNames(nil) {
			if !slices.Contains(c.matchHeaders, name) {
				c.matchHeaders = append(c.matchHeaders, name)
			}
		}
	}
	failName := func(path, format string, args ...any) {
		errs = append(errs, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...), Name: true})
	}
	c.checkRuleNames(names, failName)
	c.checkOverrides(names, fail)
	c.checkOverrideKinds(names, fail)
	c.global = c.caller(Client{}, fail, "")
	if p.Clients.Unknown == UnknownAnonymous {
		c.anonymous = c.caller(Client{Plan: AnonymousPlan}, fail, "clients.unknown")
	}
	c.compileClients(fail)
	c.checkCosts(fail)
	c.checkSettles(fail)
	c.checkAllowIDs(fail)
	if base == nil {
		c.checkSchedules(names, fail, failName)
	}
	if p.Clients.KeyHeader != "" && !validHeaderName(p.Clients.KeyHeader) {
		fail("clients.key_header", "%q is not a valid HTTP header name", p.Clients.KeyHeader)
	} else if why := uncountedHeader(p.Clients.KeyHeader); why != "" {
		fail("clients.key_header", "%s", why)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

func compileRule(i int, r Rule, fold bool, names map[string]int, fail func(string, string, ...any)) compiledRule {
	at := fmt.Sprintf("rules[%d]", i)
	switch {
	case r.Name == "":
		fail(at+".name", "missing (every rule needs a name)")
	case !validName(r.Name):
		fail(at+".name", "%q is not a valid name (letters, digits, '_', '-', '.'; at most 64)", r.Name)
	default:
		if j, dup := names[r.Name]; dup {
			fail(at+".name", "duplicate rule name %q (also rules[%d])", r.Name, j)
		} else {
			names[r.Name] = i
		}
	}
	m := CompileMatch(at, r.Match, fold, fail)
	if r.Key.Kind == KeyHeader && !validHeaderName(r.Key.Header) {
		fail(at+".key", "header name %q is not a valid HTTP header name", r.Key.Header)
	} else if why := uncountedHeader(r.Key.Header); r.Key.Kind == KeyHeader && why != "" {
		fail(at+".key", "%s", why)
	}
	if r.Key.Missing > MissingReject {
		fail(at+".missing_header", "unknown value %d (shared, ip or reject)", r.Key.Missing)
	} else if r.Key.Missing != MissingShared && r.Key.Kind != KeyHeader {
		fail(at+".missing_header", "%v applies only to key: header:NAME (the rule counts by %v)", r.Key.Missing, r.Key)
	}
	if r.Burst < 0 {
		fail(at+".burst", "%d is negative (a burst is 1 or more; 0 or absent means the rate's N)", r.Burst)
	}
	if r.Cost < 0 {
		fail(at+".cost", "%d is negative (a cost is 1 or more; 0 or absent means the default, 1)", r.Cost)
	}
	switch {
	case r.Delay != 0 && r.LimitsInFlight():
		fail(at+".delay", "a concurrency rule holds nothing for its turn (delay goes with rate on token_bucket, gcra or leaky_bucket)")
	case r.Delay != 0 && r.Classifies():
		fail(at+".delay", "a rule without a rate holds nothing (delay needs rate and token_bucket, gcra or leaky_bucket)")
	}
	if r.Classifies() && r.Priority == nil && !r.Degrade {
		fail(at+".rate", "missing: the rule does nothing (give it a rate such as 100/m, a concurrency, a priority, or degrade: true)")
	}
	cr := compiledRule{Rule: r, match: m, allowIDs: map[string]bool{}}
	if r.Key.Kind == KeyHeader {
		cr.headerName = textproto.CanonicalMIMEHeaderKey(r.Key.Header)
	}
	if r.CostHeader != "" {
		cr.costName = textproto.CanonicalMIMEHeaderKey(r.CostHeader)
	}
	if cr.Algorithm == 0 && r.Concurrency == 0 {
		cr.Algorithm = DefaultAlgorithm
	}
	if cr.Cost == 0 {
		cr.Cost = DefaultCost
	}
	if p := r.Priority; p != nil && (*p < throttle.Low || *p > throttle.Critical) {
		fail(at+".priority", "unknown priority %d (critical, high, normal or low)", *p)
	}
	if r.Concurrency != 0 {
		checkConcurrencyRule(at, r, fail)
	} else if _, err := ruleLimit(cr.Rule, r.Rate); err != nil && !r.Classifies() {
		field, msg := limitProblem(err)
		path := at + ".rate" // the rate's N or its period
		switch field {
		case limiter.FieldBurst:
			path = at + ".burst"
		case limiter.FieldDelay:
			path = at + ".delay"
		case limiter.FieldAlgorithm:
			path = at + ".algorithm"
		}
		fail(path, "%s", msg)
	}
	for _, id := range r.Allow {
		cr.allowIDs[id] = true
	}
	return cr
}

// limitProblem returns the argument limiter.New blamed and its message
// without the package prefix (the rate, and the whole error, for an error
// that is not a *limiter.LimitError).
func limitProblem(err error) (limiter.Field, string) {
	var le *limiter.LimitError
	if errors.As(err, &le) {
		return le.Field, le.Msg
	}
	return limiter.FieldRate, err.Error()
}

// ruleLimit builds the limit of rule r (its defaults filled in by
// compileRule) at rate: an override scales the rule's burst in proportion,
// rounded up, and keeps its delay.
func ruleLimit(r Rule, rate Rate) (limiter.Limit, error) {
	burst := int64(0)
	if r.Algorithm.HasBurst() && r.Burst > 0 {
		burst = r.Burst
		if rate.N != r.Rate.N && r.Rate.N > 0 {
			burst = scaleBurst(r.Burst, r.Rate.N, rate.N)
		}
	}
	l, err := limiter.New(r.Algorithm, rate.N, rate.Period, burst)
	if err != nil || r.Delay == 0 {
		return l, err
	}
	return l.WithDelay(r.Delay)
}

// scaleBurst is burst, of a rate whose N is from, for a rate whose N is
// to: in proportion, rounded up, at least 1. The product does not
// overflow: bursts and Ns are at most 10^9 (limiter.MaxBurst, MaxRate).
func scaleBurst(burst, from, to int64) int64 {
	if from == to {
		return burst
	}
	return max(1, (burst*to+from-1)/from)
}

func (c *Compiled) compileClients(fail func(string, string, ...any)) {
	for i, cl := range c.src.Clients.List {
		at := fmt.Sprintf("clients.list[%d]", i)
		if !validName(cl.ID) {
			fail(at+".id", "%q is not a valid client id (letters, digits, '_', '-', '.'; 1 to 64)", cl.ID)
		} else if _, dup := c.byID[cl.ID]; dup {
			fail(at+".id", "duplicate client id %q", cl.ID)
		}
		if cl.Plan != "" {
			if _, ok := c.src.Plans[cl.Plan]; !ok && cl.Plan != AnonymousPlan {
				fail(at+".plan", "unknown plan %q (plans: %s)", cl.Plan, planNames(c.src.Plans))
			}
		}
		caller := c.caller(cl, fail, at)
		c.byID[cl.ID] = caller
		if len(cl.Keys) == 0 && len(cl.Certs) == 0 {
			fail(at+".keys", "no keys (a client needs at least one access key, or a certificate in certs)")
		}
		c.compileCerts(cl, caller, at, fail)
		for j, k := range cl.Keys {
			kp := fmt.Sprintf("%s.keys[%d]", at, j)
			if !validKey(k) {
				fail(kp, "not a valid access key (1 to 256 visible ASCII characters)")
			} else if _, dup := c.byKey[k]; dup {
				fail(kp, "key already belongs to client %q", c.byKey[k].ID)
			}
			c.byKey[k] = caller
		}
	}
}

// compileCerts files cl's certificate selectors under caller, refusing a
// selector another client has or that is not canonical.
func (c *Compiled) compileCerts(cl Client, caller *Caller, at string, fail func(string, string, ...any)) {
	for j, sel := range cl.Certs {
		sp := fmt.Sprintf("%s.certs[%d]", at, j)
		if back, err := ParseCertSelector(sel.String()); err != nil || back != sel {
			fail(sp, "%q is not a certificate selector (%s)", sel.String(), CertSelectorSyntax)
			continue
		}
		if e, dup := c.byCert[sel]; dup {
			fail(sp, "%s already names client %q (a certificate names one client)", sel, e.caller.ID)
			continue
		}
		c.byCert[sel] = certEntry{caller: caller, spelled: sel.String()}
	}
}

// caller resolves every rule's limit for one caller (cl's ID, Plan and
// own overrides): its own override, else its plan's, else the rule's.
func (c *Compiled) caller(cl Client, fail func(string, string, ...any), at string) *Caller {
	n := len(c.rules)
	caller := &Caller{ID: cl.ID, Plan: cl.Plan, priority: c.src.Plans[cl.Plan].Priority,
		limits: make([]limiter.Limit, n), inFlight: make([]int64, n), sources: make([]string, n)}
	for i, r := range c.rules {
		if r.Concurrency != 0 {
			caller.inFlight[i], caller.sources[i] = c.callerConcurrency(r.Rule, cl, fail, at)
			continue
		}
		rate, ownRate := r.Rate, false
		plan := c.src.Plans[cl.Plan]
		if o, ok := plan.Limits[r.Name]; ok {
			rate, caller.sources[i] = o, "plan:"+cl.Plan
		} else if plan.schedulesRule(r.Name) { // the same counter at every hour
			caller.sources[i] = "plan:" + cl.Plan
		}
		if o, ok := cl.Limits[r.Name]; ok {
			rate, ownRate, caller.sources[i] = o, true, "client:"+cl.ID
		}
		l, err := ruleLimit(r.Rule, rate)
		if ownRate && r.Classifies() {
			fail(at+".limits."+r.Name, "rule %s has no rate to override: it only classifies requests (give the rule a rate, or remove this override)", r.Name)
		} else if err != nil && ownRate { // plans and rules are checked once, elsewhere
			_, msg := limitProblem(err)
			fail(at+".limits."+r.Name, "%s", msg)
		}
		caller.limits[i] = l
	}
	return caller
}

// ForwardedHeader returns the one header trusted proxies' callers are read
// from.
func (c *Compiled) ForwardedHeader() ForwardedHeader { return c.src.ForwardedHeader }

// TrustedProxy reports whether addr is in a trusted proxy network.
func (c *Compiled) TrustedProxy(addr netip.Addr) bool {
	return containsAddr(c.src.TrustedProxies, addr)
}

// containsAddr reports whether addr, without IPv4 mapping or zone (a
// prefix never contains a zoned address), is in one of nets.
func containsAddr(nets []netip.Prefix, addr netip.Addr) bool {
	addr = addr.Unmap().WithZone("")
	for _, n := range nets {
		if n.Contains(addr) {
			return true
		}
	}
	return false
}

// clonePolicy copies the slices and maps that the compiled policy reads, so
// that a program changing its Policy afterwards cannot change (or race with)
// the compiled one. IPv4-mapped networks become IPv4 ones, as lookups see
// addresses.
func clonePolicy(p Policy) Policy {
	p.TrustedProxies = unmapPrefixes(p.TrustedProxies)
	p.Rules = slices.Clone(p.Rules)
	for i := range p.Rules {
		r := &p.Rules[i]
		r.Match.Methods = slices.Clone(r.Match.Methods)
		r.Match.Headers = slices.Clone(r.Match.Headers)
		r.Allow = slices.Clone(r.Allow)
		r.AllowNets = unmapPrefixes(r.AllowNets)
		if r.Priority != nil {
			r.Priority = new(*r.Priority)
		}
	}
	plans := make(map[string]Plan, len(p.Plans))
	for name, pl := range p.Plans {
		cp := Plan{Limits: maps.Clone(pl.Limits), Concurrency: maps.Clone(pl.Concurrency), Schedule: pl.Schedule}
		if pl.Priority != nil {
			cp.Priority = new(*pl.Priority)
		}
		plans[name] = cp
	}
	p.Plans = plans
	p.Clients.List = slices.Clone(p.Clients.List)
	for i := range p.Clients.List {
		cl := &p.Clients.List[i]
		cl.Keys = slices.Clone(cl.Keys)
		cl.Certs = slices.Clone(cl.Certs)
		cl.Limits = maps.Clone(cl.Limits)
		cl.Concurrency = maps.Clone(cl.Concurrency)
	}
	cloneSchedules(&p)
	return p
}

func unmapPrefixes(nets []netip.Prefix) []netip.Prefix {
	out := make([]netip.Prefix, len(nets))
	for i, n := range nets {
		if a := n.Addr(); a.Is4In6() && n.Bits() >= 96 {
			n = netip.PrefixFrom(a.Unmap(), n.Bits()-96)
		}
		out[i] = n
	}
	return out
}
