package decision

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// Target names one counter of a rule, as an operator asks for it: whose
// limit, and what the rule counts.
type Target struct {
	// Client is a listed client's id, policy.AnonymousPlan ("anonymous")
	// for callers without a known key, or "" for a caller on the rule's
	// own limit (no plan, no override of the rule).
	Client string
	// Counted is what the rule counts, unless it counts a listed client
	// alone: an address (or an IPv6 network as counted, 2001:db8::/64)
	// for key: ip, and for key: client of a caller without an id; the
	// header's value for key: header:NAME ("" for requests without it);
	// "global" or "" for key: global.
	Counted string
}

// LookResult is one rule's counter as it stands, read without spending
// (Engine.Look, Engine.Explain).
type LookResult struct {
	// Rule is the rule's name, Index its place in the policy.
	Rule  string
	Index int
	// Mode is the rule's mode: a shadow rule refuses nothing.
	Mode policy.Mode
	// Counted names what the rule counts the caller as (the client id,
	// the address, `header X-Tenant "acme"`, all callers together);
	// never an access key.
	Counted string
	// Source is where the limit comes from: "rule", "plan:NAME",
	// "client:ID", or "override:TARGET" while a runtime override sets it
	// (policy.Caller.Source, policy.Compiled.LimitAt: "override:partner-a",
	// "override:ip:203.0.113.0/24").
	Source string
	// Limit is a rate rule's limit for the caller, Window its
	// RateLimit-Policy w; Concurrency a concurrency rule's most requests
	// in flight (0 for a rate rule).
	Limit       limiter.Limit
	Window      time.Duration
	Concurrency int64
	// Cost is what a request of the rule spends.
	Cost int64
	// Classifies: the rule counts nothing (it sets a priority or
	// degrade). Exempt: its allow list covers the caller. Neither is
	// looked at.
	Classifies, Exempt bool
	// Decision is a rate rule's look (a cost-0 decision: Limit,
	// Remaining, Reset, Refill); InFlight a concurrency rule's requests
	// in flight and Remaining its room.
	Decision limiter.Decision
	InFlight int64
	// Retry is how long a request of the rule's cost would wait now: 0
	// while there is room, limiter.Never for a cost no limit allows,
	// else the time until Remaining grows by one (exact for a cost of 1;
	// a larger cost may wait longer).
	Retry time.Duration
	// Err is why the store could not be read, if it could not.
	Err error

	key store.Key // the store key: never shown
}

// Refuses reports whether an enforcing rule would refuse a request now.
func (r *LookResult) Refuses() bool {
	return r.Mode == policy.Enforce && r.Err == nil && r.Retry > 0
}

// NotFoundError is the error of a look for a rule or client the policy
// does not have; Known lists the names it has.
type NotFoundError struct {
	What, Name string // "rule" or "client", and the name asked for
	Known      []string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no %s %q (%ss: %s)", e.What, e.Name, e.What, strings.Join(e.Known, ", "))
}

// TargetError is the error of a look whose Target does not name a counter
// of the rule: it says what the rule counts and what would be accepted.
type TargetError struct{ Msg string }

func (e *TargetError) Error() string { return e.Msg }

// Look reads the counter of rule that target names, without spending
// (a cost-0 decision, or a lease of cost 0): the same store key a request
// of that caller is counted on. It fails with a *NotFoundError for an
// unknown rule or client, a *TargetError for a target the rule does not
// count by, and the store's error (in LookResult.Err as well).
func (e *Engine) Look(ctx context.Context, set Settings, rule string, target Target) (LookResult, error) {
	pol := set.Policy
	i, caller, addr, err := lookTarget(pol, rule, target)
	if err != nil {
		return LookResult{}, err
	}
	key, err := targetKey(pol, caller, i, addr, target)
	if err != nil {
		return LookResult{}, err
	}
	res := e.lookRule(ctxOr(ctx), pol, caller, i, key, addr, e.opts.Clock.Now())
	res.Counted = targetCounted(pol, caller, i, addr, target)
	return res, res.Err
}

// Reset resets the counter of rule that target names (as Look finds it),
// through the store's store.Resetter: on a shared store, for every
// instance. It returns what the counter was just before.
func (e *Engine) Reset(ctx context.Context, set Settings, rule string, target Target) (LookResult, error) {
	res, err := e.Look(ctx, set, rule, target)
	var nf *NotFoundError
	var te *TargetError
	if errors.As(err, &nf) || errors.As(err, &te) || res.Classifies || res.Exempt {
		return res, err
	}
	r, ok := e.opts.Store.(store.Resetter)
	if !ok {
		return res, fmt.Errorf("decision: the store cannot reset a counter (%T)", e.opts.Store)
	}
	return res, r.Reset(ctxOr(ctx), res.key)
}

// lookTarget finds rule and target's caller in pol, and target's address
// when Counted is one.
func lookTarget(pol *policy.Compiled, rule string, target Target) (int, *policy.Caller, netip.Addr, error) {
	i := -1
	var rules []string
	for j := range pol.Rules() {
		rules = append(rules, pol.Rule(j).Name)
		if pol.Rule(j).Name == rule {
			i = j
		}
	}
	if i < 0 {
		return 0, nil, netip.Addr{}, &NotFoundError{What: "rule", Name: rule, Known: rules}
	}
	caller, err := targetCaller(pol, target.Client)
	if err != nil {
		return 0, nil, netip.Addr{}, err
	}
	var addr netip.Addr
	if k := pol.Rule(i).Key.Kind; k == policy.KeyIP || k == policy.KeyClient && caller.ID == "" {
		if addr, err = parseCounted(target.Counted); err != nil {
			return 0, nil, netip.Addr{}, &TargetError{Msg: fmt.Sprintf("rule %s counts %s by address: counted=%q %v (an address such as 192.0.2.7 or 2001:db8::/64)",
				rule, callerWord(caller), target.Counted, err)}
		}
	}
	return i, caller, addr, nil
}

// targetCaller returns the caller client names: a listed client,
// "anonymous", or "" for the rule's own limit.
func targetCaller(pol *policy.Compiled, client string) (*policy.Caller, error) {
	switch client {
	case "":
		return pol.Unidentified(), nil
	case policy.AnonymousPlan:
		if a := pol.Anonymous(); a != nil {
			return a, nil
		}
	}
	if c, ok := pol.CallerByID(client); ok {
		return c, nil
	}
	var known []string
	for _, cl := range pol.Policy().Clients.List {
		known = append(known, cl.ID)
	}
	if pol.Anonymous() != nil {
		known = append(known, policy.AnonymousPlan)
	}
	slices.Sort(known)
	return nil, &NotFoundError{What: "client", Name: client, Known: known}
}

// callerWord names a caller in a TargetError.
func callerWord(c *policy.Caller) string {
	if c.ID != "" {
		return c.ID
	}
	return "callers without a listed key"
}

// parseCounted reads an address as a look names it: an address, or the
// network an IPv6 address is counted by.
func parseCounted(s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, errors.New("is missing")
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), nil
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Addr().Unmap(), nil
	}
	return netip.Addr{}, errors.New("is not an address")
}

// targetKey is the store key of rule i for caller and target: what
// stateKey makes for a request counted so.
func targetKey(pol *policy.Compiled, caller *policy.Caller, i int, addr netip.Addr, t Target) (store.Key, error) {
	rule := pol.Rule(i)
	ip := ipGroup{pol: pol, addr: addr}
	switch rule.Key.Kind {
	case policy.KeyHeader:
		switch {
		case t.Counted == "" && rule.Key.Missing == policy.MissingIP:
			return store.Key{}, &TargetError{Msg: fmt.Sprintf("rule %s counts requests without header %s by address: ask /api/v1/explain with the request's address", rule.Name, rule.Key.Header)}
		case t.Counted == "" && rule.Key.Missing == policy.MissingReject:
			return store.Key{}, &TargetError{Msg: fmt.Sprintf("rule %s refuses requests without header %s: give counted=VALUE, the header's value", rule.Name, rule.Key.Header)}
		}
		return makeKey(pol, caller, i, &ip, t.Counted), nil
	case policy.KeyGlobal:
		if t.Counted != "" && t.Counted != "global" {
			return store.Key{}, &TargetError{Msg: fmt.Sprintf("rule %s counts all callers together: counted=global or nothing, not %q", rule.Name, t.Counted)}
		}
	}
	return makeKey(pol, caller, i, &ip, ""), nil
}

// targetCounted names what rule i counts for a target, as counted does
// for a request.
func targetCounted(pol *policy.Compiled, caller *policy.Caller, i int, addr netip.Addr, t Target) string {
	rule := pol.Rule(i)
	switch rule.Key.Kind {
	case policy.KeyClient, policy.KeyIP:
		if rule.Key.Kind == policy.KeyClient && caller.ID != "" {
			return caller.ID
		}
		return address(pol, addr)
	case policy.KeyHeader:
		if t.Counted == "" {
			return "requests without header " + rule.Key.Header
		}
		return "header " + rule.Key.Header + " " + shownValue(pol, rule.Key.Header, t.Counted)
	}
	return "all callers together"
}

// lookRule reads rule i's counter on key for caller at now, without
// spending. Counted is left for the caller to name.
func (e *Engine) lookRule(ctx context.Context, pol *policy.Compiled, caller *policy.Caller, i int, key store.Key, addr netip.Addr, now time.Time) LookResult {
	rule := pol.Rule(i)
	res := LookResult{Rule: rule.Name, Index: i, Mode: rule.Mode, Cost: rule.Cost, key: key,
		Classifies: rule.Classifies(), Exempt: pol.Exempt(i, caller.ID, addr)}
	limit, source := pol.LimitAt(caller, i, addr)
	res.Source = cmp.Or(source, "rule")
	if res.Classifies || res.Exempt || key == (store.Key{}) { // none: a shadow rule that counts nothing without its header
		return res
	}
	if rule.LimitsInFlight() {
		res.Concurrency = caller.Concurrency(i)
		d, err := e.acquireOne(ctx, key, store.Concurrency{Max: res.Concurrency, TTL: e.opts.LeaseTTL}, now, 0)
		res.InFlight, res.Err = d.InFlight, err
		res.Decision = limiter.Decision{Allowed: err == nil, Limit: d.Limit, Remaining: d.Remaining()}
		switch {
		case err != nil || d.Remaining() >= rule.Cost:
		case rule.Cost > d.Limit:
			res.Retry = limiter.Never
		default:
			res.Retry = store.LeaseRetryAfter
		}
		return res
	}
	res.Limit = limit
	res.Window = policyWindow(res.Limit)
	out, err := e.opts.Store.DecideEach(ctx, nil, []store.Request{{Key: key, Limit: res.Limit}}, now)
	switch {
	case err == nil && len(out) != 1:
		err = errShortBatch
	case err == nil:
		res.Decision, err = out[0].Decision, out[0].Err
	}
	res.Err = err
	switch d := res.Decision; {
	case err != nil || d.Remaining >= rule.Cost:
	case rule.Cost > d.Limit:
		res.Retry = limiter.Never
	default:
		res.Retry = max(d.Refill, time.Microsecond)
	}
	return res
}
