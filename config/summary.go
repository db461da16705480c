package config

import (
	"fmt"
	"io"
	"strings"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// WriteSummary writes what f does in a few lines, defaults included: the
// addresses, the store, how callers are recognised and, for every rule, the
// limit each client gets once plans and overrides are applied. It is what
// `sluice check` prints for a valid file.
func (f *File) WriteSummary(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "listen %s -> upstream %s; admin %s\n", f.Listen, f.Upstream.Redacted(), f.Admin)
	b.WriteString(f.Store.summary())
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
		fmt.Fprintf(&b, "clients: %d, recognised by %s; unknown callers: %s\n", len(p.Clients.List), c.KeyHeader(), unknown)
	} else {
		b.WriteString("clients: none (rules count by ip, header or global)\n")
	}
	for i := 0; i < c.Rules(); i++ {
		f.ruleSummary(&b, i)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (s Store) summary() string {
	where := fmt.Sprintf("memory (at most %d keys)", s.MaxKeys)
	if s.Type == "redis" {
		tls := ""
		if s.Redis.TLS {
			tls = ", TLS"
		}
		where = fmt.Sprintf("redis %s (timeout %v, prefix %q%s)", strings.Join(s.Redis.Addrs, ", "), s.Redis.Timeout, s.Redis.Prefix, tls)
	}
	fail := s.OnFailure.String()
	if s.OnFailure == store.FailLocal {
		fail += fmt.Sprintf(" (each of %d instances allows limit/%d)", s.Instances, s.Instances)
	}
	return fmt.Sprintf("store: %s; on store failure: %s\n", where, fail)
}

// ruleSummary writes rule i and the limit each caller gets from it.
func (f *File) ruleSummary(b *strings.Builder, i int) {
	c := f.Compiled
	r := c.Rule(i)
	match := r.Match.Path
	if match == "" {
		match = "/"
	}
	if len(r.Match.Methods) > 0 {
		match = strings.Join(r.Match.Methods, ",") + " " + match
	}
	fmt.Fprintf(b, "rule %s: %s, by %v, %v, %v, cost %d\n", r.Name, match, r.Key, limitText(c.RuleLimit(i)), r.Mode, r.Cost)
	for _, cl := range f.Policy.Clients.List {
		caller, ok := c.CallerByID(cl.ID)
		if !ok {
			continue
		}
		fmt.Fprintf(b, "  %s: %s (%s)\n", cl.ID, rateText(caller.Limit(i)), f.source(cl.Plan, cl.Limits, r.Name))
	}
	if a := c.Anonymous(); a != nil {
		fmt.Fprintf(b, "  unknown callers: %s (%s)\n", rateText(a.Limit(i)), f.source(policy.AnonymousPlan, nil, r.Name))
	}
	var allow []string
	allow = append(allow, r.Allow...)
	for _, n := range r.AllowNets {
		allow = append(allow, n.String())
	}
	if len(allow) > 0 {
		fmt.Fprintf(b, "  never limited: %s\n", strings.Join(allow, ", "))
	}
}

// source says where a caller's limit for rule comes from.
func (f *File) source(plan string, own map[string]policy.Rate, rule string) string {
	if _, ok := own[rule]; ok {
		return "own limit"
	}
	if plan == "" {
		return "the rule's rate"
	}
	if _, ok := f.Policy.Plans[plan].Limits[rule]; ok {
		return "plan " + plan
	}
	return "plan " + plan + ": the rule's rate"
}

// rateText formats a limit's rate, and its burst for a bucket: "100/m",
// "100/m burst 20".
func rateText(l limiter.Limit) string {
	s := policy.Rate{N: l.Rate(), Period: l.Period()}.String()
	if l.Algorithm().HasBurst() {
		s += fmt.Sprintf(" burst %d", l.Burst())
	}
	return s
}

// limitText formats a limit as configuration writes it: "sliding_window
// 100/m", "gcra 100/m burst 20".
func limitText(l limiter.Limit) string {
	return l.Algorithm().String() + " " + rateText(l)
}
