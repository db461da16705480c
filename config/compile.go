package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"go.yaml.in/yaml/v3"
)

// compileErrors reports the problems policy.Compile found at the nodes
// their paths name, leaving out those at paths already reported.
func (d *decoder) compileErrors(err error) {
	if err == nil {
		return
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var fe *policy.FieldError
		if !errors.As(e, &fe) {
			d.errorf(nil, "", "%v", e)
			continue
		}
		if !d.reported(fe.Path) && !d.followsBadRate(fe.Path) {
			d.errorf(d.nodeAt(fe.Path, fe.Name), fe.Path, "%s", fe.Msg)
		}
	}
}

// limitFields are the fields of a rule whose checks need its rate.
var limitFields = []string{"algorithm", "burst", "delay", "cost", "schedule"}

// followsBadRate reports whether a problem policy.Compile found at path
// follows from a rule's rate that was reported already: without its rate
// the rule looks as if it only classified requests, so that its burst,
// delay, cost and schedule, and every plan's and client's override of it,
// would each be reported as pointing at a rule with no rate.
func (d *decoder) followsBadRate(path string) bool {
	for at, name := range d.rateless {
		if rest, ok := strings.CutPrefix(path, at+"."); ok {
			field, _, _ := strings.Cut(rest, ".")
			field, _, _ = strings.Cut(field, "[")
			if slices.Contains(limitFields, field) {
				return true
			}
		}
		if name != "" && strings.HasSuffix(path, "."+name) && (strings.HasPrefix(path, "plans.") || strings.HasPrefix(path, "clients.")) {
			return true
		}
	}
	return false
}

// reported reports whether path or a path above it has failed already.
func (d *decoder) reported(path string) bool {
	for {
		if d.failed[path] {
			return true
		}
		if path == "" {
			return false
		}
		path = parent(path)
	}
}

// nodeAt returns the node a problem at path is best shown at: the key of a
// mapping entry when the name is at fault, else the value at path, else the
// nearest enclosing node that exists.
func (d *decoder) nodeAt(path string, name bool) *yaml.Node {
	if k := d.keys[path]; k != nil && name {
		return k
	}
	for {
		if n := d.nodes[path]; n != nil {
			return n
		}
		if path == "" {
			return nil
		}
		path = parent(path)
	}
}

// parent strips the last ".name" or "[i]" from path.
func parent(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

// checkLocalShares warns about rules whose cost is more than an instance's
// local share of a limit allows at once: with on_failure: local each of
// store.instances instances enforces the limit divided by their number (at
// least 1), so while the store fails every such request is refused.
func (d *decoder) checkLocalShares(f *File) {
	n := int64(f.Store.Instances)
	if f.Store.OnFailure != store.FailLocal || n < 2 {
		return
	}
	c := f.Compiled
	callers := []*policy.Caller{c.Anonymous()}
	for _, cl := range f.Policy.Clients.List {
		caller, _ := c.CallerByID(cl.ID)
		callers = append(callers, caller)
	}
	for i := 0; i < c.Rules(); i++ {
		r, smallest := c.Rule(i), atOnce(c.Unidentified(), i)
		for _, caller := range callers {
			if caller != nil {
				smallest = min(smallest, atOnce(caller, i))
			}
		}
		if share := max(1, smallest/n); r.Cost > share {
			path := fmt.Sprintf("rules[%d].cost", i)
			d.warnf(d.nodeAt(path, false), path, "%d is more than the %d that each of %d instances allows on its own (a limit of %d at once, divided by store.instances) with on_failure: local: while the store fails, such requests are refused", r.Cost, share, n, smallest)
		}
	}
}

// atOnce is the most rule i allows caller at once: its concurrency, or
// its rate limit's burst.
func atOnce(caller *policy.Caller, i int) int64 {
	if n := caller.Concurrency(i); n > 0 {
		return n
	}
	return caller.Limit(i).Burst()
}

// checkLeaseMax reports a store.redis.lease.max above every rate rule's
// limit (its burst, or its rate for the windows), for any caller: no lease
// could ever take it. A rule of a smaller limit is leased at most its
// limit at a time.
func (d *decoder) checkLeaseMax(f *File) {
	lease := f.Store.Redis.Lease
	if f.Store.Type != "redis" || lease.Max == 0 {
		return
	}
	c := f.Compiled
	callers := []*policy.Caller{c.Anonymous(), c.Unidentified()}
	for _, cl := range f.Policy.Clients.List {
		caller, _ := c.CallerByID(cl.ID)
		callers = append(callers, caller)
	}
	largest := int64(0)
	for i := 0; i < c.Rules(); i++ {
		for _, caller := range callers {
			if caller != nil && caller.Concurrency(i) == 0 {
				largest = max(largest, caller.Limit(i).Burst())
			}
		}
	}
	if largest > 0 && lease.Max > largest {
		path := "store.redis.lease.max"
		d.fail(d.nodeAt(path, false), path, "%d is above the largest limit of a rule, %d: a lease takes at most a limit's units (1 to %d)",
			lease.Max, largest, largest)
	}
}
