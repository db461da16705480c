package config

import (
	"fmt"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"go.yaml.in/yaml/v3"
)

// checkLogBound refuses sliding_log limits whose logs the memory store
// could not keep within store.memory.max_log_entries. The store bounds
// every other caller's log, and a caller without room is counted with
// others on its rule's overflow counter; but the listed clients' counters
// and the overflow counters always have room, each with a log of up to
// the limit's N entries. If those logs alone could exceed the bound, no
// bound holds: that is an error at each sliding_log rule's rate. Redis
// keeps its own logs: the bound applies to the memory store and to
// on_failure: local's fallback, which allows limit/instances.
func (d *decoder) checkLogBound(f *File) {
	c := f.Compiled
	total, clients, overflows, rules := logBound(f, c)
	bound := int64(f.Store.MaxLogEntries)
	if total <= bound {
		return
	}
	for _, i := range rules {
		path := index("rules", i) + ".rate"
		n, rate := d.nodeAt(path, false), c.Policy().Rules[i].Rate.String()
		if n != nil && n.Kind == yaml.ScalarNode {
			rate = n.Value // as written
		}
		d.errorf(n, path, "sliding_log %s: the logs that always have room (%d of listed clients, "+
			"%d of overflow counters, over every sliding_log rule) could hold %d entries, more than "+
			"store.memory.max_log_entries %d (raise max_log_entries, lower N, or use sliding_window or gcra, "+
			"which keep two numbers per caller)", rate, clients, overflows, total, bound)
	}
}

// logBound sums the sliding_log entries that always have room under c on
// f's store (reservedLog), with the rules that hold some; nothing on Redis
// without a local fallback.
func logBound(f *File, c *policy.Compiled) (total, clients, overflows int64, rules []int) {
	share := int64(1)
	switch {
	case f.Store.Type == "redis" && f.Store.OnFailure == store.FailLocal:
		share = int64(f.Store.Instances)
	case f.Store.Type == "redis":
		return 0, 0, 0, nil
	}
	for i := range c.Rules() {
		n, cl, ov := reservedLog(c, i, share)
		if n > 0 {
			total, clients, overflows, rules = total+n, clients+cl, overflows+ov, append(rules, i)
		}
	}
	return total, clients, overflows, rules
}

// LogBoundProblem says why c, a policy f's store would decide under (f's
// own with run-time overrides), holds sliding_log logs that could exceed
// store.memory.max_log_entries (as Load refuses for the file's own
// limits); "" when they cannot.
func LogBoundProblem(f *File, c *policy.Compiled) string {
	total, clients, overflows, _ := logBound(f, c)
	if bound := int64(f.Store.MaxLogEntries); bound > 0 && total > bound {
		return fmt.Sprintf("the sliding_log logs that always have room (%d of listed clients, %d of overflow counters) could hold %d entries, "+
			"more than store.memory.max_log_entries %d (a lower rate, or raise max_log_entries)", clients, overflows, total, bound)
	}
	return ""
}

// reservedLog returns the log entries of rule i that always have room,
// at share of each limit: the full logs of the listed clients' counters
// (a rule with key: client) and of the overflow counters, one per distinct
// limit of the rule's other callers; and how many logs of each kind.
func reservedLog(c *policy.Compiled, i int, share int64) (entries, clients, overflows int64) {
	if c.Rule(i).Algorithm != limiter.SlidingLog {
		return 0, 0, 0
	}
	byClient := c.Rule(i).Key.Kind == policy.KeyClient
	seen := map[limiter.Limit]bool{}
	others := []*policy.Caller{c.Anonymous()}
	if !c.IdentifiesByKey() {
		others = append(others, c.Unidentified())
	}
	for _, cl := range c.Policy().Clients.List {
		caller, ok := c.CallerByID(cl.ID)
		switch {
		case !ok:
		case byClient:
			entries, clients = entries+max(1, caller.Limit(i).Rate()/share), clients+1
		default:
			others = append(others, caller)
		}
	}
	for _, caller := range others {
		if caller == nil {
			continue
		}
		if l := caller.Limit(i); l.Algorithm() == limiter.SlidingLog && !seen[l] {
			seen[l], entries, overflows = true, entries+max(1, l.Rate()/share), overflows+1
		}
	}
	return entries, clients, overflows
}
