package policy

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// Overrides are the limits and blocks an operator sets at run time, for
// one client or one address range, on top of a compiled policy
// (Compiled.WithOverrides). Their precedence, for one rule and one
// caller, from the strongest:
//
//  1. an override of the caller's client id;
//  2. the override of the longest address range that holds the caller's
//     address (as it is counted: after trusted proxies);
//  3. the client's own limit (Client.Limits), then its plan's, then the
//     rule's rate.
//
// A block of the client or of a range that holds its address beats every
// limit: the request is refused (403) and nothing is counted. An override
// never changes a store key (Caller.LimitSource stays what the file
// makes it), so the counters so far are judged under the new limit, as a
// reload's changed rate is (limiter.Reinterpret).

// Override is one runtime override: a new limit of one rule, or a block on
// every rule, for one client or one address range.
type Override struct {
	// Client is a client id of the policy; "" when Addr is set.
	Client string
	// Addr is an address range (ip:ADDR[/BITS]); valid only when Client
	// is "".
	Addr netip.Prefix
	// Rule is the rule whose limit is replaced; "" for a Block.
	Rule string
	// Rate is the new rate (rate rules only).
	Rate Rate
	// Burst is the new bucket size (token_bucket, gcra, leaky_bucket);
	// 0: the rule's burst scaled to Rate, as a plan's override scales it.
	// The window algorithms take none.
	Burst int64
	// Block refuses the target's requests on every rule: 403, nothing
	// counted.
	Block bool
	// Until is when the override ends (zero: until removed); a block's
	// 403 names it. The program that keeps the overrides removes them
	// when they end, on its own clock: until then a limit stays in force,
	// while the decision core refuses nothing with a block whose Until
	// has passed.
	Until time.Time
}

// OverrideError is an override WithOverrides left out: the Index of it in
// the slice given, and what is wrong with it. Err.Path is "target",
// "rule", "rate" or "burst": the part of the override at fault.
type OverrideError struct {
	Index int
	Err   *FieldError
}

// The words of overrides' targets and sources.
const (
	// AddrTargetPrefix begins the target of an address range: ip:ADDR[/BITS].
	AddrTargetPrefix = "ip:"
	// OverrideSourcePrefix begins the source (Caller.Source) of a limit an
	// override sets: "override:" and the override's Target.
	OverrideSourcePrefix = "override:"
)

// WithOverrides returns a copy of c with exactly ovs in force: overrides
// c was given before are replaced, not added to, so that a program keeps
// the whole set and hands it over after each change (and after a reload,
// to the new file's policy). c is unchanged and may be used meanwhile. Of
// two overrides of the same target and rule (or two blocks of one
// target), the later in ovs is in force.
//
// An override that cannot apply is left out and reported in errs, one
// error per override, in ovs order: an unknown client or rule, a
// concurrency rule or a rule without a rate, a rate or burst limiter.New
// refuses, a limit under which the rule's cost could never pass, an
// invalid or non-canonical range, a block with a rule.
func (c *Compiled) WithOverrides(ovs []Override) (*Compiled, []OverrideError) {
	file := c.file()
	out := *file
	out.plain = file
	out.overrides = nil
	out.addrs = nil
	w := overriding{c: &out, copies: map[string]*Caller{}}
	var errs []OverrideError
	for i, o := range ovs {
		if fe := w.apply(o); fe != nil {
			errs = append(errs, OverrideError{Index: i, Err: fe})
			continue
		}
		out.overrides = append(out.overrides, o)
	}
	w.finish()
	return &out, errs
}

// file returns c as compiled from its Policy, without overrides.
func (c *Compiled) file() *Compiled {
	if c.plain != nil {
		return c.plain
	}
	return c
}

// Overrides returns the overrides in force: those WithOverrides applied,
// in the order it was given them.
func (c *Compiled) Overrides() []Override { return slices.Clone(c.overrides) }

// overriding applies overrides to c, a copy of a policy without any.
type overriding struct {
	c      *Compiled
	copies map[string]*Caller // by client id: the callers changed, copied
	addrs  addrOverrides
}

// apply puts o in force, or says why it cannot apply.
func (w *overriding) apply(o Override) *FieldError {
	target, fe := w.target(o)
	if fe != nil {
		return fe
	}
	if o.Block {
		if fe := blockProblem(o); fe != nil {
			return fe
		}
		w.block(o, target)
		return nil
	}
	i, l, fe := w.c.overrideLimit(o)
	if fe != nil {
		return fe
	}
	if o.Client != "" {
		cl := w.caller(o.Client)
		cl.limits[i], cl.shown[i] = l, OverrideSourcePrefix+o.Client
		return nil
	}
	e := w.addrs.entry(target, len(w.c.rules))
	e.limits[i] = l
	return nil
}

// target checks o's target: a listed client, or a canonical range,
// returned.
func (w *overriding) target(o Override) (netip.Prefix, *FieldError) {
	switch {
	case o.Client != "" && o.Addr.IsValid():
		return netip.Prefix{}, targetError("both client %q and range %s: an override has one target (a client id, or ip:ADDR[/BITS])", o.Client, o.Addr)
	case o.Client != "":
		if _, ok := w.c.byID[o.Client]; !ok {
			return netip.Prefix{}, targetError("unknown client %q (a client id from clients.list: %s; or ip:ADDR[/BITS])", o.Client, w.c.clientNames())
		}
		return netip.Prefix{}, nil
	case o.Addr == netip.Prefix{}:
		return netip.Prefix{}, targetError("missing (a client id from clients.list, or ip:ADDR[/BITS])")
	}
	p, msg := canonicalRange(o.Addr)
	if msg != "" {
		return netip.Prefix{}, targetError("%s", msg)
	}
	return p, nil
}

// blockProblem says what a block may not have: a rule, a rate, a burst.
func blockProblem(o Override) *FieldError {
	switch {
	case o.Rule != "":
		return &FieldError{Path: "rule", Msg: fmt.Sprintf("a block applies to every rule, not to rule %s alone (remove rule to block, or give a rate instead of block)", o.Rule)}
	case o.Rate != Rate{}:
		return &FieldError{Path: "rate", Msg: fmt.Sprintf("a block refuses every request and takes no rate (remove rate %v to block, or block to override the rate)", o.Rate)}
	case o.Burst != 0:
		return &FieldError{Path: "burst", Msg: "a block refuses every request and takes no burst (remove burst)"}
	}
	return nil
}

// block puts the block o of target (a range, when o names no client) in
// force.
func (w *overriding) block(o Override, target netip.Prefix) {
	if o.Client != "" {
		cl := w.caller(o.Client)
		cl.blocked, cl.blockUntil = true, o.Until
		return
	}
	e := w.addrs.entry(target, len(w.c.rules))
	e.blocked, e.until = true, o.Until
}

// caller returns the copy of client id's caller that overrides change.
func (w *overriding) caller(id string) *Caller {
	if cl, ok := w.copies[id]; ok {
		return cl
	}
	cl := *w.c.byID[id]
	cl.limits = slices.Clone(cl.limits)
	cl.shown = make([]string, len(cl.limits))
	w.copies[id] = &cl
	return &cl
}

// finish points the policy's maps at the changed callers and puts the
// address overrides in force.
func (w *overriding) finish() {
	c := w.c
	if len(w.copies) > 0 {
		c.byID, c.byKey = maps.Clone(c.byID), maps.Clone(c.byKey)
		for _, cl := range c.src.Clients.List {
			cp, ok := w.copies[cl.ID]
			if !ok {
				continue
			}
			c.byID[cl.ID] = cp
			for _, k := range cl.Keys {
				c.byKey[k] = cp
			}
		}
	}
	if len(w.addrs.byRange) > 0 {
		w.addrs.sortBits()
		c.addrs = &w.addrs
	}
}

// overrideLimit returns the rule o overrides and its new limit, or what
// is wrong with them.
func (c *Compiled) overrideLimit(o Override) (int, limiter.Limit, *FieldError) {
	i, fe := c.overriddenRule(o.Rule)
	if fe != nil {
		return 0, limiter.Limit{}, fe
	}
	r := c.rules[i].Rule
	switch {
	case o.Rate == Rate{}:
		return 0, limiter.Limit{}, &FieldError{Path: "rate", Msg: fmt.Sprintf("missing: give rule %s a rate such as %v, or block the target", r.Name, r.Rate)}
	case o.Burst < 0:
		return 0, limiter.Limit{}, &FieldError{Path: "burst", Msg: fmt.Sprintf("%d is negative (a burst is 1 or more; 0 or absent scales the rule's burst to the rate)", o.Burst)}
	}
	l, err := overrideRuleLimit(r, o)
	if err != nil {
		field, msg := limitProblem(err)
		path := "rate"
		if field == limiter.FieldBurst {
			path = "burst"
		}
		return 0, limiter.Limit{}, &FieldError{Path: path, Msg: msg}
	}
	if msg := costProblem(r, l); msg != "" {
		path := "rate"
		if o.Burst != 0 {
			path = "burst"
		}
		return 0, limiter.Limit{}, &FieldError{Path: path, Msg: msg}
	}
	return i, l, nil
}

// overriddenRule returns the index of the rate rule name, or why an
// override cannot replace its limit.
func (c *Compiled) overriddenRule(name string) (int, *FieldError) {
	if name == "" {
		return 0, &FieldError{Path: "rule", Msg: fmt.Sprintf("missing: name the rule whose limit the override replaces (rules with a rate: %s), or block the target", c.rateRuleNames())}
	}
	for i := range c.rules {
		r := &c.rules[i].Rule
		switch {
		case r.Name != name:
		case r.LimitsInFlight():
			return 0, &FieldError{Path: "rule", Msg: fmt.Sprintf("rule %s limits requests in flight, and an override sets a rate (rules with a rate: %s)", name, c.rateRuleNames())}
		case r.Classifies():
			return 0, &FieldError{Path: "rule", Msg: fmt.Sprintf("rule %s has no rate to override: it only classifies requests (rules with a rate: %s)", name, c.rateRuleNames())}
		default:
			return i, nil
		}
	}
	return 0, &FieldError{Path: "rule", Msg: fmt.Sprintf("unknown rule %q (rules with a rate: %s)", clipText(name), c.rateRuleNames())}
}

// overrideRuleLimit builds rule r's limit under o: o's rate, with o's
// burst, or the rule's scaled as a plan's override scales it
// (ruleLimit); the rule's delay is kept.
func overrideRuleLimit(r Rule, o Override) (limiter.Limit, error) {
	if o.Burst == 0 {
		return ruleLimit(r, o.Rate)
	}
	l, err := limiter.New(r.Algorithm, o.Rate.N, o.Rate.Period, o.Burst)
	if err != nil || r.Delay == 0 {
		return l, err
	}
	return l.WithDelay(r.Delay)
}

// rateRuleNames lists the rules an override can replace the limit of.
func (c *Compiled) rateRuleNames() string {
	var names []string
	for i := range c.rules {
		if r := &c.rules[i].Rule; !r.LimitsInFlight() && !r.Classifies() {
			names = append(names, r.Name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// maxNamesShown bounds how many client ids an error lists.
const maxNamesShown = 10

// clientNames lists the policy's client ids for an error, sorted, at most
// maxNamesShown of them.
func (c *Compiled) clientNames() string {
	ids := slices.Sorted(maps.Keys(c.byID))
	if len(ids) == 0 {
		return "none listed"
	}
	if len(ids) > maxNamesShown {
		return fmt.Sprintf("%s ... (%d in all)", strings.Join(ids[:maxNamesShown], ", "), len(ids))
	}
	return strings.Join(ids, ", ")
}

// Source names where the caller's limit of rule i comes from, for display:
// "override:ID" while an override of the client is in force (an address
// override's source depends on the address: Compiled.LimitAt), else what
// LimitSource says ("" for the rule's own rate). Store keys use
// LimitSource, never Source: an override keeps the counters.
func (c *Caller) Source(i int) string {
	if c.overridden(i) {
		return c.shown[i]
	}
	return c.sources[i]
}

// overridden reports whether an override of the caller's client sets its
// limit of rule i.
func (c *Caller) overridden(i int) bool { return c.shown != nil && c.shown[i] != "" }

// Blocked reports whether the caller's client is blocked, and until when
// (the zero Time: until the block is removed).
func (c *Caller) Blocked() (until time.Time, ok bool) { return c.blockUntil, c.blocked }

// HasAddrOverrides reports whether any address range has an override or
// a block: without one, a caller's limits are its Caller's and no address
// is blocked, so the data path need not look.
func (c *Compiled) HasAddrOverrides() bool { return c.addrs != nil }

// LimitAt returns the limit rule i applies to caller counted at addr
// (the zero Addr: unknown), and its source for display: an override of
// the caller's client, else the override of the longest range that holds
// addr and overrides rule i, else the caller's own (Caller.Limit,
// Caller.Source).
func (c *Compiled) LimitAt(caller *Caller, i int, addr netip.Addr) (limiter.Limit, string) {
	if c.addrs != nil && !caller.overridden(i) {
		if l, src, ok := c.AddrLimit(i, addr); ok {
			return l, src
		}
	}
	return caller.limits[i], caller.Source(i)
}

// AddrLimit returns the limit of rule i that the longest range holding
// addr and overriding rule i sets, with its source ("override:ip:RANGE");
// false when no range overrides rule i at addr. An override of a client
// beats it (LimitAt).
func (c *Compiled) AddrLimit(i int, addr netip.Addr) (limiter.Limit, string, bool) {
	if c.addrs == nil {
		return limiter.Limit{}, "", false
	}
	if _, e := c.addrs.find(addr, i); e != nil {
		return e.limits[i], e.source, true
	}
	return limiter.Limit{}, "", false
}

// AddrBlocked reports whether a block of a range holding addr is in
// force: the longest such range, and until when (the zero Time: until the
// block is removed).
func (c *Compiled) AddrBlocked(addr netip.Addr) (prefix netip.Prefix, until time.Time, ok bool) {
	if c.addrs == nil {
		return netip.Prefix{}, time.Time{}, false
	}
	p, e := c.addrs.find(addr, -1)
	if e == nil {
		return netip.Prefix{}, time.Time{}, false
	}
	return p, e.until, true
}
