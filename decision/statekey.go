package decision

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"strings"

	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// stateKey is the store key of rule i for this request: the rule, its
// algorithm (policy.Caller.StateTag: not its rate, so that a changed limit
// keeps the key's counters), and what the rule counts by. A key that
// counts several callers together (by IP, a header's value or globally)
// also names where the caller's limit comes from (policy.Caller.LimitSource:
// the rule, a plan or a client's override; nothing for the rule's own
// rate), so that callers on different limits count apart.
func stateKey(pol *policy.Compiled, caller *policy.Caller, i int, ip *ipGroup, v *Verdict) store.Key {
	rule := pol.Rule(i)
	if v.req.Key != nil { // the transport's key: never cached, it is the program's
		if k, ok := v.req.Key(rule.Name); ok {
			return customKey(caller, i, rule.Name, caller.StateTag(i), k)
		}
	}
	switch rule.Key.Kind {
	case policy.KeyClient, policy.KeyIP:
		id := keyID{caller: caller, rule: i}
		if rule.Key.Kind == policy.KeyIP || caller.ID == "" { // a caller without an id is counted by IP
			id.addr = ip.addr
		}
		return ip.keys.key(id, func() store.Key { return makeKey(pol, caller, i, ip, "") })
	case policy.KeyHeader:
		val, missing := headerValue(pol, i, v)
		if missing && rule.Key.Missing == policy.MissingIP {
			return ip.keys.key(keyID{addr: ip.addr, caller: caller, rule: i}, func() store.Key { return makeKey(pol, caller, i, ip, "") })
		}
		return makeKey(pol, caller, i, ip, val)
	}
	return ip.keys.key(keyID{caller: caller, rule: i}, func() store.Key { return makeKey(pol, caller, i, ip, "") })
}

// makeKey makes stateKey's key; val is the value of a header:NAME rule's
// header, whose key does not count by address.
func makeKey(pol *policy.Compiled, caller *policy.Caller, i int, ip *ipGroup, val string) store.Key {
	rule := pol.Rule(i)
	tag := caller.StateTag(i)
	// A key counting one caller is in that caller's group, so that a
	// store can keep all of a caller's keys together (Redis Cluster: one
	// hash slot, one script call for all of its rules).
	if rule.Key.Kind == policy.KeyClient && caller.ID != "" {
		k := store.GroupKey(store.Parts("client", caller.ID), rule.Name, tag)
		return k.Listed() // bounded by the policy: a bounded store keeps room for it
	}
	var parts [3]string
	shared := append(parts[:0], tag)
	if src := caller.LimitSource(i); src != "" {
		shared = append(shared, src)
	}
	switch {
	case rule.Key.Kind == policy.KeyHeader && (val != "" || rule.Key.Missing != policy.MissingIP):
		// Without the header (missing_header: shared) a request counts on
		// the value "", one counter for them all, so leaving it out is no
		// way around the limit. Long values are hashed, so a caller cannot
		// make a counter cost more than a short key.
		return store.GroupKey(store.Parts("header", boundedValue(val)), rule.Name, shared...)
	case rule.Key.Kind == policy.KeyGlobal:
		return store.NewKey(rule.Name, append(shared, "global")...)
	}
	return store.GroupKey(ip.group(), rule.Name, shared...) // client without an id, ip, header missing under missing_header: ip
}

// customKey is the store key of rule i for a request the transport's key
// hook gave key k (Request.Key): in k's own group, apart from every
// client, address and header group, and, as any key that may count
// several callers together, naming where the caller's limit comes from.
// Long keys are hashed, as header values are.
func customKey(caller *policy.Caller, i int, rule, tag, k string) store.Key {
	group := store.Parts("key", boundedValue(k))
	if src := caller.LimitSource(i); src != "" {
		return store.GroupKey(group, rule, tag, src)
	}
	return store.GroupKey(group, rule, tag)
}

// ipGroup is the store group of the keys that count a caller's address,
// store.NewKey("ip", pol.IPKey(addr)), made at most once per request however
// many rules count by it.
type ipGroup struct {
	pol  *policy.Compiled
	addr netip.Addr
	keys *keyCache // the policy's
	key  string    // "" until group is called
}

func (g *ipGroup) group() string {
	if g.key == "" {
		g.key = store.Parts("ip", g.pol.IPKey(g.addr))
	}
	return g.key
}

// ForeignKey reports whether key is not a store key of a policy's rules:
// its rule is not a rule's name, which is never empty and never holds ':'.
// Such keys are made by others sharing the store, such as package rls's
// counters of Envoy's rule files and of descriptors' own limits ("rls:"
// and a domain), whose values, and for a descriptor's own limit even the
// limit, the caller picks: a bounded store keeps them apart, so that
// however many a caller makes they take no room from the policy's keys.
// It is what memory.Options.Guest is for.
func ForeignKey(key store.Key) bool {
	rule := key.Rule()
	return rule == "" || strings.IndexByte(rule, ':') >= 0
}

// maxKeyValue is the longest header value used in a state key as it is.
const maxKeyValue = 128

func boundedValue(v string) string {
	if len(v) <= maxKeyValue {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return "sha256:" + hex.EncodeToString(sum[:])
}
