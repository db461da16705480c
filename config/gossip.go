package config

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"go.yaml.in/yaml/v3"
)

// Defaults and bounds of the gossip block.
const (
	DefaultGossipBind        = "0.0.0.0:7946"
	DefaultGossipInterval    = 200 * time.Millisecond
	DefaultGossipMaxUnsynced = 10
	MinGossipInterval        = 10 * time.Millisecond
	MaxGossipInterval        = 10 * time.Second
)

// Gossip is how instances with store type gossip find each other and
// exchange their counts (store.gossip).
type Gossip struct {
	// Bind is the host:port this instance gossips on, UDP and TCP.
	// Default 0.0.0.0:7946.
	Bind string
	// Join are host:port addresses of other instances; at least one.
	Join []string
	// Interval is how often an instance tells the others what it
	// counted, 10ms to 10s. Default 200ms.
	Interval time.Duration
	// MaxUnsynced is the most an instance admits for a key beyond what
	// the others acknowledged hearing, 1 to 1000000000. Default 10.
	MaxUnsynced int64
	// Key encrypts the gossip: 16, 24 or 32 bytes, written base64 (a
	// secret: env:NAME or file:PATH). Default none: in the clear.
	Key []byte
}

// Equal reports whether g and o are the same settings.
func (g Gossip) Equal(o Gossip) bool {
	return g.Bind == o.Bind && g.Interval == o.Interval && g.MaxUnsynced == o.MaxUnsynced &&
		string(g.Key) == string(o.Key) && fmt.Sprint(g.Join) == fmt.Sprint(o.Join)
}

var gossipFields = []string{"bind", "join", "interval", "max_unsynced", "key"}

// gossip decodes the gossip block; join is required when used, and the
// defaults are filled in only then.
func (d *decoder) gossip(n *yaml.Node, path string, used bool, typeNode *yaml.Node) Gossip {
	g := Gossip{Bind: DefaultGossipBind, Interval: DefaultGossipInterval, MaxUnsynced: DefaultGossipMaxUnsynced}
	m := d.fields(n, path, "a mapping ("+strings.Join(gossipFields, ", ")+")", gossipFields)
	if b := m["bind"]; !isNull(b) {
		g.Bind = d.hostPort(b, join(path, "bind"), false)
	}
	var joins int
	g.Join, joins = d.addrList(m["join"], join(path, "join"))
	if used && joins == 0 && !d.failed[join(path, "join")] {
		at := n
		if at == nil {
			at = typeNode
		}
		d.fail(at, join(path, "join"), "missing (the host:port of at least one other instance, such as join: [10.0.0.2:7946, 10.0.0.3:7946]; an instance's own address is skipped, so every instance can list the same addresses)")
	}
	if v, ok := d.durationIn(m["interval"], join(path, "interval"),
		func(v time.Duration) bool { return v >= MinGossipInterval && v <= MaxGossipInterval },
		fmt.Sprintf("such as 100ms, 1s; default %v", DefaultGossipInterval),
		fmt.Sprintf("%v to %v; default %v", MinGossipInterval, MaxGossipInterval, DefaultGossipInterval)); ok {
		g.Interval = v
	}
	g.MaxUnsynced = d.integer(m["max_unsynced"], join(path, "max_unsynced"), 1, 1_000_000_000, DefaultGossipMaxUnsynced,
		fmt.Sprintf("1 to 1000000000; default %d", DefaultGossipMaxUnsynced))
	if k := m["key"]; !isNull(k) {
		g.Key = d.gossipKey(k, join(path, "key"))
	}
	if !used { // checked, but the zero Gossip of a store of another type
		return Gossip{}
	}
	return g
}

// gossipKey decodes the encryption key: a secret holding the base64 of
// 16, 24 or 32 bytes.
func (d *decoder) gossipKey(n *yaml.Node, path string) []byte {
	s, ok := d.secret(n, path, "a key")
	if !ok {
		return nil
	}
	const want = "the base64 of 16, 24 or 32 random bytes, the same on every instance, such as the output of: head -c 32 /dev/urandom | base64; best as env:NAME or file:PATH"
	k, err := base64.StdEncoding.DecodeString(s)
	switch {
	case err != nil:
		d.fail(n, path, "not base64 (%s)", want)
	case len(k) != 16 && len(k) != 24 && len(k) != 32:
		d.fail(n, path, "%d bytes once decoded (%s)", len(k), want)
	default:
		return k
	}
	return nil
}

// checkGossipAddrs refuses a gossip address that is also listen's or the
// admin port's.
func (d *decoder) checkGossipAddrs(f *File) {
	if f.Store.Type != "gossip" || f.Store.Gossip.Bind == "" {
		return
	}
	n := d.nodeAt("store.gossip.bind", false)
	for _, o := range []struct{ name, addr string }{{"listen", f.Listen}, {"admin", f.Admin}} {
		if o.addr != "" && sameAddr(f.Store.Gossip.Bind, o.addr) {
			d.fail(n, "store.gossip.bind", "%s is also %s's address (gossip needs a port of its own, such as bind: 0.0.0.0:7946)", f.Store.Gossip.Bind, o.name)
		}
	}
	if f.Store.Gossip.Key == nil && !loopback(f.Store.Gossip.Bind) {
		d.warnf(n, "store.gossip.bind", "%s is reachable from other machines and no store.gossip.key is set: anyone who reaches it can read the counts and join the fleet with counts of its own (set key: env:SLUICE_GOSSIP_KEY, the base64 of 32 random bytes)", f.Store.Gossip.Bind)
	}
}

// gossipAlgorithm reports whether the gossip store keeps alg within its
// bound: the window algorithms (as store/gossip.Supported says).
func gossipAlgorithm(alg limiter.Algorithm) bool {
	return alg == limiter.FixedWindow || alg == limiter.SlidingWindow
}

// checkGossipRules refuses, with store type gossip, the rules the gossip
// store cannot keep within its bound: an algorithm other than
// fixed_window or sliding_window, and concurrency limits (leases).
// With a running store of type gossip (a reload), the same rules are
// refused whatever the file's store says, as the running store decides
// them until a restart.
func (d *decoder) checkGossipRules(f *File, c *policy.Compiled) {
	running := ""
	switch {
	case f.Store.Type == "gossip":
	case d.running != nil && d.running.Type == "gossip":
		running = ", running until a restart"
	default:
		return
	}
	for i := range c.Rules() {
		r := c.Rule(i)
		switch {
		case r.Concurrency > 0:
			path := index("rules", i) + ".concurrency"
			d.errorf(d.nodeAt(path, false), path, "rule %s: concurrency limits are not kept by store type gossip%s (use store type redis for a count in flight shared by the instances, or memory for one per instance)", r.Name, running)
		case r.Algorithm != 0 && !gossipAlgorithm(r.Algorithm):
			path := index("rules", i) + ".algorithm"
			d.errorf(d.nodeAt(path, false), path, "rule %s: %v is not kept by store type gossip%s, whose bound holds for counts that add up across instances (fixed_window or sliding_window; or store type redis for any algorithm)", r.Name, r.Algorithm, running)
		}
	}
}
