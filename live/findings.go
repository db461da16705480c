package live

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/policy"
)

// The kinds of Finding.
const (
	RetriesTooSoon   = "retries_too_soon"
	LimitTooLow      = "limit_too_low"
	SharedAddress    = "shared_address"
	SeparateCounters = "separate_counters"
)

// Thresholds of the findings (see the package doc).
const (
	// MinEarly is the fewest requests before Retry-After that make
	// retries_too_soon; they must also be at least half of the caller's
	// refusals.
	MinEarly = 10
	// MinWindows is the fewest distinct windows in which a caller that
	// waited as told was refused that make limit_too_low; at most
	// MaxEarlyLow of its requests may have come before its Retry-After
	// (a race between two workers of one program, not a program that
	// ignores it), in the period and since the start of the whole period
	// before the current one.
	MinWindows  = 3
	MaxEarlyLow = 2
)

// Finding is one typical mistake recognised over the period.
type Finding struct {
	Kind string `json:"kind"`
	// Rule is the rule it concerns ("" for the whole configuration).
	Rule string `json:"rule"`
	// Clients are the client ids concerned; never nil.
	Clients []string `json:"clients"`
	// Address is the address counter concerned (shared_address), or the
	// address of an ip rule's counter; "" otherwise.
	Address string `json:"address"`
	// Detail says it in a sentence an operator understands.
	Detail string `json:"detail"`
	// Evidence is what it was recognised from: counts, and the times
	// (RFC 3339) of the first and last event counted ("since", "last").
	Evidence map[string]any `json:"evidence"`
}

// findings are rs's findings at t over period; rs.mu is held.
func (rs *ruleState) findings(t int64, period time.Duration) []Finding {
	var out []Finding
	for _, e := range rs.pool {
		if !e.inRefused && !e.inUsed {
			continue
		}
		s := e.period.sum(t, rs.width)
		if s.n[refused] == 0 && s.n[early] == 0 {
			continue
		}
		if f, ok := rs.tooSoon(e, s, period); ok {
			out = append(out, f)
		} else if f, ok := rs.tooLow(e, s, t, period); ok {
			out = append(out, f)
		}
		if f, ok := rs.sharedAddress(e, s, t, period); ok {
			out = append(out, f)
		}
	}
	return out
}

// address is what Finding.Address says of e: its counted address for a
// rule that counts by address.
func (rs *ruleState) address(e *entry) string {
	if rs.info.Key == "ip" {
		return e.counted
	}
	return ""
}

// tooSoon is retries_too_soon for e: its caller (the client told the
// last Retry-After) kept sending before it.
func (rs *ruleState) tooSoon(e *entry, s periodSum, period time.Duration) (Finding, bool) {
	n, ref := s.n[early], s.n[refused]
	if n < MinEarly || 2*n < ref {
		return Finding{}, false
	}
	return Finding{Kind: RetriesTooSoon, Rule: rs.name, Clients: []string{e.told}, Address: rs.address(e),
		Detail: fmt.Sprintf("%s sent %d requests before its Retry-After in the last %s (rule %s): its program retries at once instead of waiting",
			e.told, n, shortDuration(period), rs.name),
		Evidence: evidence(s, map[string]any{"early": n, "refused": ref}),
	}, true
}

// tooLow is limit_too_low for e: its caller waited as told and was still
// refused in MinWindows distinct windows, with few requests early.
func (rs *ruleState) tooLow(e *entry, s periodSum, t int64, period time.Duration) (Finding, bool) {
	windows, n, ref := s.n[patient], s.n[early], s.n[refused]
	if windows < MinWindows || e.earlyBefore(t, rs.period) > MaxEarlyLow || e.told == "" { // earlyBefore covers the period
		return Finding{}, false
	}
	limit := fmt.Sprintf("%d", e.limit)
	if rs.info.window > 0 {
		limit += " per " + shortDuration(rs.info.window)
	}
	return Finding{Kind: LimitTooLow, Rule: rs.name, Clients: []string{e.told}, Address: rs.address(e),
		Detail: fmt.Sprintf("%s waited as told and was still refused in %d windows of rule %s in the last %s (%d refusals, %d early): it needs more than %s; raise its limit (its plan or its own limits)",
			e.told, windows, rs.name, shortDuration(period), ref, n, limit),
		Evidence: evidence(s, map[string]any{"windows": windows, "refused": ref, "early": n, "limit": e.limit}),
	}, true
}

// sharedAddress is shared_address for e: two or more client ids were
// refused on one counter of a rule that counts by address.
func (rs *ruleState) sharedAddress(e *entry, s periodSum, t int64, period time.Duration) (Finding, bool) {
	if rs.address(e) == "" {
		return Finding{}, false
	}
	var clients []string
	for _, c := range e.refusedBy {
		if identified(c.client) && c.last > t-int64(period) {
			clients = append(clients, c.client)
		}
	}
	if len(clients) < 2 {
		return Finding{}, false
	}
	slices.Sort(clients)
	return Finding{Kind: SharedAddress, Rule: rs.name, Clients: clients, Address: e.counted,
		Detail: fmt.Sprintf("%s were refused on one counter of address %s in the last %s (rule %s, %d refusals): they share the address and limit each other; count them by client (key: client)",
			andList(clients), e.counted, shortDuration(period), rs.name, s.n[refused]),
		Evidence: evidence(s, map[string]any{"refused": s.n[refused], "clients": len(clients)}),
	}, true
}

// identified reports whether client is a client id, not one of the
// Report's words for callers without one.
func identified(client string) bool {
	switch client {
	case "", "-", decision.UnknownClient, policy.AnonymousPlan:
		return false
	}
	return true
}

// storeFindings are the separate_counters findings at t.
func (l *Live) storeFindings(t int64, in Inputs) []Finding {
	var out []Finding
	l.mu.Lock()
	s := l.store.sum(t, l.width())
	l.mu.Unlock()
	if n := s.n[degradedSeconds]; n > 0 && (in.OnFailure == "open" || in.OnFailure == "local") {
		how := "so a caller could reach its limit on every instance"
		if in.OnFailure == "local" {
			how = "each with its share of the limit"
		}
		out = append(out, Finding{Kind: SeparateCounters, Clients: []string{},
			Detail: fmt.Sprintf("the store was unreachable for %ds in the last %s (on_failure %s): each instance counted its callers apart, %s",
				n, shortDuration(l.opts.Period), in.OnFailure, how),
			Evidence: evidence(s, map[string]any{"seconds": n, "on_failure": in.OnFailure}),
		})
	}
	return append(out, versionFindings(in.Instances)...)
}

// versionFindings are separate_counters for instances that share the
// store but apply different versions of a rule (of the configuration,
// when they do not say per rule).
func versionFindings(insts []Instance) []Finding {
	if len(insts) < 2 {
		return nil
	}
	perRule := true
	names := map[string]bool{}
	for _, in := range insts {
		perRule = perRule && in.Rules != nil
		for name := range in.Rules {
			names[name] = true
		}
	}
	var out []Finding
	if !perRule {
		if f, ok := versionFinding("", insts, func(in Instance) string { return in.Version }); ok {
			out = append(out, f)
		}
		return out
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range names {
			if !yield(n) {
				return
			}
		}
	}) {
		if f, ok := versionFinding(name, insts, func(in Instance) string { return in.Rules[name] }); ok {
			out = append(out, f)
		}
	}
	return out
}

// versionFinding is separate_counters for rule (the configuration if "")
// if version says the instances differ on it.
func versionFinding(rule string, insts []Instance, version func(Instance) string) (Finding, bool) {
	versions := map[string]any{}
	distinct := map[string]bool{}
	var ids []string
	for _, in := range insts {
		v := cmp.Or(version(in), "(none)")
		versions[in.ID] = v
		distinct[v] = true
		ids = append(ids, in.ID+" ("+v+")")
	}
	if len(distinct) < 2 {
		return Finding{}, false
	}
	what := "configurations"
	if rule != "" {
		what = "versions of rule " + rule
	}
	return Finding{Kind: SeparateCounters, Rule: rule, Clients: []string{},
		Detail: fmt.Sprintf("instances %s share the counters but apply different %s: a caller's limit depends on the instance it reaches",
			andList(ids), what),
		Evidence: map[string]any{"versions": versions},
	}, true
}

// evidence adds the period's first and last times to counts.
func evidence(s periodSum, counts map[string]any) map[string]any {
	if s.first != 0 {
		counts["since"] = time.Unix(0, s.first).UTC().Format(time.RFC3339)
		counts["last"] = time.Unix(0, s.last).UTC().Format(time.RFC3339)
	}
	return counts
}

// sortFindings orders findings by kind, rule, then clients and address.
func sortFindings(fs []Finding) {
	order := map[string]int{RetriesTooSoon: 0, LimitTooLow: 1, SharedAddress: 2, SeparateCounters: 3}
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(order[a.Kind], order[b.Kind]), cmp.Compare(a.Rule, b.Rule),
			cmp.Compare(strings.Join(a.Clients, ","), strings.Join(b.Clients, ",")), cmp.Compare(a.Address, b.Address))
	})
}

// andList joins names as a sentence does: "a", "a and b", "a, b and c".
func andList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// shortDuration is d as configuration writes it: 10m, 1h30m, 90s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
