package config

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/throttle"
)

// WriteSummary writes what f does, defaults included: the addresses, the
// store, how callers are recognised, the settings that change how every
// rule matches or answers, a table of the rules (match, key with what a
// request without a counted header counts as, algorithm, rate, burst,
// cost, mode) and, when clients are listed, a table of the limit each
// client gets from each rule once plans and its own overrides are applied.
// Then, when rules or plans have schedules, a table of their entries in
// the file's time zone. It is what `sluice check` prints for a valid
// file (check adds which entries are in force now).
func (f *File) WriteSummary(w io.Writer) error {
	var b strings.Builder
	if len(f.Upstreams) > 1 || len(f.Upstreams) == 1 && f.Upstreams[0].Name != DefaultUpstreamName {
		fmt.Fprintf(&b, "listen %s -> %d upstreams; ", f.Listen, len(f.Upstreams))
	} else if f.Upstream != nil {
		fmt.Fprintf(&b, "listen %s -> upstream %s; ", f.Listen, f.Upstream.Redacted())
	} else {
		b.WriteString("no upstream: the decision service only; ")
	}
	fmt.Fprintf(&b, "admin %s", f.Admin)
	if f.AdminToken != "" {
		b.WriteString(" (token required)")
	}
	b.WriteString("\n" + tlsSummary("tls", f.TLS, f.Server) + tlsSummary("admin tls", f.AdminTLS, f.Server))
	b.WriteString(f.Decide.summary())
	b.WriteString(f.Store.summary())
	b.WriteString(f.Server.summary())
	b.WriteString(f.Live.summary())
	b.WriteString(f.Runtime.summary(f))
	b.WriteString(upstreamsSummary(f))
	b.WriteString(protectSummary(f.Protect))
	b.WriteString(signalsSummary(f.Signals))
	p := f.Policy
	if len(p.TrustedProxies) > 0 {
		fmt.Fprintf(&b, "trusted proxies: %v; callers read from %v only\n", p.TrustedProxies, p.ForwardedHeader)
	}
	c := f.Compiled
	if c.IdentifiesByKey() {
		unknown := "rejected (401)"
		if c.Anonymous() != nil {
			unknown = "counted by IP, plan anonymous"
		}
		by := c.KeyHeader()
		if c.IdentifiesByCert() {
			by += " and client certificates"
		}
		fmt.Fprintf(&b, "clients: %d, recognised by %s; unknown callers: %s\n", len(p.Clients.List), by, unknown)
	} else {
		b.WriteString("clients: none (rules count by ip, header or global)\n")
	}
	if raised := planPriorities(p.Plans); raised != "" {
		b.WriteString("plans raising their clients' priority: " + raised + "\n")
	}
	if notes := f.matchingNotes(); len(notes) > 0 {
		b.WriteString(strings.Join(notes, "; ") + "\n")
	}
	b.WriteString("\n")
	f.ruleTable(&b)
	f.callerTable(&b)
	f.scheduleTable(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// matchingNotes names the settings, other than their defaults, that change
// how every rule matches, counts or answers.
func (f *File) matchingNotes() []string {
	var notes []string
	p := f.Policy
	if p.CaseInsensitivePaths {
		notes = append(notes, "paths matched regardless of case")
	}
	if p.IPv6Prefix != 0 && p.IPv6Prefix != policy.DefaultIPv6Prefix {
		notes = append(notes, fmt.Sprintf("IPv6 callers counted by /%d", p.IPv6Prefix))
	}
	if f.LegacyHeaders {
		notes = append(notes, "legacy X-RateLimit-* headers sent")
	}
	return notes
}

// ruleTable writes one row per rule.
func (f *File) ruleTable(b *strings.Builder) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	c := f.Compiled
	classHead := "" // the priority column, when protect or a rule's class says anything
	for i := 0; i < c.Rules(); i++ {
		if f.Protect != nil || c.Rule(i).Priority != nil || c.Rule(i).Degrade {
			classHead = "\tPRIORITY"
		}
	}
	fmt.Fprintln(tw, "RULE\tMATCH\tKEY\tALGORITHM\tRATE\tBURST\tCOST\tMODE\tNEVER LIMITED"+classHead)
	for i := 0; i < c.Rules(); i++ {
		r, l := c.Rule(i), c.RuleLimit(i)
		match := r.Match.Path
		if match == "" {
			match = "/"
		}
		if len(r.Match.Methods) > 0 {
			match = strings.Join(r.Match.Methods, ",") + " " + match
		}
		burst := "-"
		if l.Algorithm().HasBurst() {
			burst = fmt.Sprint(l.Burst())
		}
		if l.Delay() > 0 {
			burst += fmt.Sprintf(", delay %v", l.Delay())
		}
		allow := slices.Clone(r.Allow)
		for _, n := range r.AllowNets {
			allow = append(allow, n.String())
		}
		if len(allow) == 0 {
			allow = []string{"-"}
		}
		key := r.Key.String()
		if r.Key.Kind == policy.KeyHeader {
			key += fmt.Sprintf(" (missing: %v)", r.Key.Missing)
		}
		alg, rate := l.Algorithm().String(), policy.Rate{N: l.Rate(), Period: l.Period()}.String()
		switch {
		case r.LimitsInFlight():
			alg, rate = "concurrency", fmt.Sprintf("%d in flight", r.Concurrency)
		case r.Classifies():
			alg, rate = "-", "- (classifies)"
		}
		class := ""
		if classHead != "" {
			class = "\t" + classText(r)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%v\t%s%s\n", r.Name, match, key, alg,
			rate, burst, costText(r), r.Mode, strings.Join(allow, ","), class)
	}
	tw.Flush()
}

// callerTable writes, for every listed client (and unknown callers when
// they are counted), the limit each rule gives it and where that comes
// from. It writes nothing when no clients are listed.
func (f *File) callerTable(b *strings.Builder) {
	c := f.Compiled
	if len(f.Policy.Clients.List) == 0 {
		return
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tCLIENT\tPLAN\tLIMIT\tFROM")
	for i := 0; i < c.Rules(); i++ {
		name := c.Rule(i).Name
		if c.Rule(i).Classifies() {
			continue // no limit to show
		}
		for _, cl := range f.Policy.Clients.List {
			if caller, ok := c.CallerByID(cl.ID); ok {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, cl.ID, orDash(cl.Plan), limitText(caller, i), source(caller, i))
			}
		}
		if a := c.Anonymous(); a != nil {
			fmt.Fprintf(tw, "%s\t(unknown)\t%s\t%s\t%s\n", name, policy.AnonymousPlan, limitText(a, i), source(a, i))
		}
	}
	tw.Flush()
}

// protectSummary is a line on the protect block, or none.
func protectSummary(c *throttle.Config) string {
	if c == nil {
		return ""
	}
	s := fmt.Sprintf("protect: at most %d in flight", c.MaxInFlight)
	if a := c.Adaptive; a != nil {
		s += fmt.Sprintf(", adaptive from %d (p99 target %v)", a.MinInFlight, a.LatencyTarget)
	}
	if c.Queue.MaxLength > 0 {
		s += fmt.Sprintf(", queue %d (max wait %v)", c.Queue.MaxLength, c.Queue.MaxWait)
	} else {
		s += ", no queue"
	}
	s += fmt.Sprintf(", shedding from %v of the limit", c.ShedFrom)
	if c.UpstreamBackoff {
		s += ", upstream back-off"
	}
	return s + "\n"
}

// planPriorities lists the plans that set a priority, by name: "gold
// high, silver normal"; "" when none does.
func planPriorities(plans map[string]policy.Plan) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(plans)) {
		if p := plans[name].Priority; p != nil {
			out = append(out, name+" "+p.String())
		}
	}
	return strings.Join(out, ", ")
}

// classText is a rule's priority ("-" when it sets none), and degrade
// if set: "normal", "low, degrade".
func classText(r *policy.Rule) string {
	s := "-"
	if r.Priority != nil {
		s = r.Priority.String()
	}
	if r.Degrade {
		s += ", degrade"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// summary says what tls's mapping set: " (ca FILE, client certificate
// FILE, server name NAME)", or "" for none of them.
func (t RedisTLS) summary() string {
	var parts []string
	if t.CAFile != "" {
		parts = append(parts, "ca "+t.CAFile)
	}
	if t.CertFile != "" {
		parts = append(parts, "client certificate "+t.CertFile)
	}
	if t.ServerName != "" {
		parts = append(parts, "server name "+t.ServerName)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func (s Store) summary() string {
	where := fmt.Sprintf("memory (at most %d keys)", s.MaxKeys)
	if s.Type == "redis" {
		tls := ""
		if s.Redis.TLS {
			tls = ", TLS" + s.Redis.TLSOptions.summary()
		}
		if l := s.Redis.Lease; l.Max > 0 {
			tls += fmt.Sprintf(", a hot key's quota leased %d units at a time for at most %v", l.Max, l.TTL)
		}
		where = fmt.Sprintf("redis %s (timeout %v, prefix %q%s)", strings.Join(s.Redis.Addrs, ", "), s.Redis.Timeout, s.Redis.Prefix, tls)
	}
	if s.Type == "gossip" {
		enc := "in the clear"
		if s.Gossip.Key != nil {
			enc = "encrypted"
		}
		g := s.Gossip
		return fmt.Sprintf("store: gossip on %s, joining %s, every %v, %s; at most limit + (instances - 1) x %d admitted per window; at most %d keys\n",
			g.Bind, strings.Join(g.Join, ", "), g.Interval, enc, g.MaxUnsynced, s.MaxKeys)
	}
	fail := s.OnFailure.String()
	if s.OnFailure == store.FailLocal {
		fail += fmt.Sprintf(" (each of %d instances allows limit/%d)", s.Instances, s.Instances)
	}
	leases := ""
	if s.LeaseTTL != 0 && s.LeaseTTL != DefaultLeaseTTL {
		leases = fmt.Sprintf("; concurrency leases expire %v after their last renewal", s.LeaseTTL)
	}
	return fmt.Sprintf("store: %s; on store failure: %s%s\n", where, fail, leases)
}

// source says where a caller's limit of rule i comes from: client, plan
// or rule.
func source(caller *policy.Caller, i int) string {
	src, _, _ := strings.Cut(caller.LimitSource(i), ":")
	return cmp.Or(src, "rule")
}

// limitText formats a caller's limit of rule i: its rate (rateText), or
// "10 in flight".
func limitText(caller *policy.Caller, i int) string {
	if n := caller.Concurrency(i); n > 0 {
		return fmt.Sprintf("%d in flight", n)
	}
	return rateText(caller.Limit(i))
}

// rateText formats a limit's rate, and its burst and delay for a bucket:
// "100/m", "100/m burst 20", "10/s burst 10 delay 2s".
func rateText(l limiter.Limit) string {
	s := policy.Rate{N: l.Rate(), Period: l.Period()}.String()
	if l.Algorithm().HasBurst() {
		s += fmt.Sprintf(" burst %d", l.Burst())
	}
	if l.Delay() > 0 {
		s += fmt.Sprintf(" delay %v", l.Delay())
	}
	return s
}
