package rls

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/limiter"
)

// Rules is a compiled set of envoyproxy/ratelimit rule files: one
// descriptor tree per domain. It is immutable; Server.SetRules swaps it.
type Rules struct {
	domains map[string]*node
}

// node is one level of a domain's tree. A request's entry matches, in
// this order, the child with its key and value, then the first wildcard
// child whose pattern matches its value, then the child with its key and
// no value, as envoyproxy/ratelimit looks them up.
type node struct {
	exact     map[entry]*node
	wildcards []wildcard
	rule      *rule
	prefix    string       // a domain's root: "rls:" and the domain, its store keys' first part
	stats     *domainStats // a domain's root: its request counters, set by the Server that uses the rules
	// share is the wildcard value of a share_threshold descriptor: every
	// value it matches is counted as this one.
	share string
}

// entry is a descriptor entry: as configured, where value "" matches any
// value, or as a request's descriptor holds it, as the lookup reads it.
type entry struct{ key, value string }

// wildcard is a child whose value holds '*': parts is the value split at
// each '*'.
type wildcard struct {
	key   string
	parts []string
	child *node
}

// rule is the limit at the end of a descriptor path.
type rule struct {
	// label names the rule in metrics and in the RateLimit headers: its
	// path of key_value (or key) as configured, joined by '.', never a
	// request's value.
	label     string
	name      string // rate_limit.name, for replaces
	replaces  []string
	unlimited bool
	shadow    bool
	quota     bool
	limit     limiter.Limit
	current   *pb.RateLimitResponse_RateLimit // as sent back in DescriptorStatus.current_limit
	period    time.Duration
	stats     *ruleStats
}

// unitNames maps config's unit names to the protocol's units.
var unitNames = map[string]pb.RateLimitResponse_RateLimit_Unit{
	"second": pb.RateLimitResponse_RateLimit_SECOND,
	"minute": pb.RateLimitResponse_RateLimit_MINUTE,
	"hour":   pb.RateLimitResponse_RateLimit_HOUR,
	"day":    pb.RateLimitResponse_RateLimit_DAY,
	"week":   pb.RateLimitResponse_RateLimit_WEEK,
	"month":  pb.RateLimitResponse_RateLimit_MONTH,
	"year":   pb.RateLimitResponse_RateLimit_YEAR,
}

// Compile builds Rules from the rule files config.LoadEnvoy read.
func Compile(domains []config.EnvoyDomain) *Rules {
	r := &Rules{domains: make(map[string]*node, len(domains))}
	for _, d := range domains {
		root := &node{prefix: "rls:" + d.Domain}
		addChildren(root, "", d.Descriptors)
		r.domains[d.Domain] = root
	}
	return r
}

// Domains returns the configured domains' names.
func (r *Rules) Domains() []string {
	out := make([]string, 0, len(r.domains))
	for d := range r.domains {
		out = append(out, d)
	}
	return out
}

func addChildren(n *node, parent string, descs []config.EnvoyDescriptor) {
	for _, d := range descs {
		label := d.Key
		if d.Value != "" {
			label += "_" + d.Value
		}
		if parent != "" {
			label = parent + "." + label
		}
		child := &node{}
		if d.ShareThreshold {
			child.share = d.Value
		}
		if d.RateLimit != nil {
			child.rule = newRule(label, d)
		}
		addChildren(child, label, d.Descriptors)
		if strings.Contains(d.Value, "*") {
			n.wildcards = append(n.wildcards, wildcard{key: d.Key, parts: strings.Split(d.Value, "*"), child: child})
			continue
		}
		if n.exact == nil {
			n.exact = map[entry]*node{}
		}
		n.exact[entry{d.Key, d.Value}] = child
	}
}

func newRule(label string, d config.EnvoyDescriptor) *rule {
	rl := d.RateLimit
	r := &rule{label: label, name: rl.Name, replaces: rl.Replaces, unlimited: rl.Unlimited,
		shadow: d.ShadowMode, quota: d.QuotaMode, limit: rl.Limit}
	if !rl.Unlimited {
		r.period, _ = config.EnvoyUnit(rl.Unit)
		r.current = &pb.RateLimitResponse_RateLimit{Name: rl.Name, RequestsPerUnit: rl.RequestsPerUnit, Unit: unitNames[rl.Unit]}
	}
	return r
}

// lookup finds the rule of a descriptor's entries under a domain's root,
// as envoyproxy/ratelimit does: the path must end at a rule exactly at the
// last entry. It also returns the entries whose value a share_threshold
// wildcard stands for in the count.
func (n *node) lookup(entries []entry) (*rule, []sharedValue) {
	var shared []sharedValue
	for i, e := range entries {
		next, wild := n.child(e.key, e.value)
		if next == nil {
			return nil, nil
		}
		if wild && next.share != "" {
			shared = append(shared, sharedValue{i, next.share})
		}
		if i == len(entries)-1 {
			return next.rule, shared
		}
		if next.exact == nil && next.wildcards == nil {
			return nil, nil // the request goes deeper than the tree
		}
		n = next
	}
	return nil, nil
}

// sharedValue is an entry whose value is counted as its wildcard's.
type sharedValue struct {
	index int
	value string
}

// child returns the child matching key and value, and whether it matched
// by a wildcard.
func (n *node) child(key, value string) (*node, bool) {
	if c := n.exact[entry{key, value}]; c != nil && value != "" {
		return c, false
	}
	for _, w := range n.wildcards {
		if w.key == key && wildcardMatch(w.parts, value) {
			return w.child, true
		}
	}
	return n.exact[entry{key, ""}], false
}

// wildcardMatch reports whether value matches the pattern split at its
// '*'s into parts: it starts with the first part, ends with the last, and
// holds the others in order between them, without overlap.
func wildcardMatch(parts []string, value string) bool {
	first, last := parts[0], parts[len(parts)-1]
	if len(value) < len(first)+len(last) || !strings.HasPrefix(value, first) || !strings.HasSuffix(value, last) {
		return false
	}
	rest := value[len(first) : len(value)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return true
}

// maxKeyPart is the longest entry value kept as it is in a store key; a
// longer one is replaced by its SHA-256, yet two values never share a
// count. maxStoreKey bounds the whole key likewise (key), so that a store
// key's size is bounded whatever a caller sends.
const (
	maxKeyPart  = 256
	maxStoreKey = 4096
)

// keyPart is a value as it enters a store key, after its mark: "=" and
// the value, or "#" and its hex SHA-256 when it is longer than maxKeyPart.
func keyPart(s string) (mark, v string) {
	if len(s) <= maxKeyPart {
		return "=", s
	}
	sum := sha256.Sum256([]byte(s))
	return "#", hex.EncodeToString(sum[:])
}
