package store

import (
	"strconv"
	"strings"
)

// Key names the state of one limited thing: a rule's counter for one
// caller, or for all callers together. It stays structure until a store
// that needs bytes encodes it (Append), so that a store reads what it
// needs without parsing: the Redis store takes its Cluster hash tag from
// Group, the memory store its overflow counter from Rule and its reserved
// room from Listed.
//
// Every part is written as its length, a colon and its bytes, so no two
// different keys have the same encoding: ("a_b", "c") and ("a", "b_c")
// stay apart, a grouped key (its encoding starts with '@') never equals
// an ungrouped one (it starts with a digit). A Key with neither Group nor
// Rule is its Rest as it stands: bytes a program made itself
// (RawKey).
type Key struct {
	// Group is the caller the key counts, encoded by Parts (such as
	// Parts("client", id)), or "" for a key that counts no one caller.
	// A store may place a group's keys together: the Redis store makes
	// the group the key's hash tag, which puts all of one caller's keys on
	// one Cluster node and lets their rules be decided in one script call.
	Group string
	// Rule is the name of the rule whose state it is; "" for a raw key.
	Rule string
	// Rest is the rest of the key, encoded by Parts: the rule's state tag
	// and what it counts by.
	Rest string
	// Listed marks a key that counts one of the clients a policy lists
	// (a key: client rule, for a caller with a client id). Such keys are
	// bounded by the policy, not by the callers, so a bounded store keeps
	// room for them whatever else arrives (the memory store does).
	Listed bool
}

// NewKey returns the key of rule for the parts that identify what it
// counts (a client id, an IP prefix, a header value).
func NewKey(rule string, parts ...string) Key {
	return Key{Rule: rule, Rest: Parts(parts...)}
}

// GroupKey is NewKey for a key in group (see Key.Group), which should be
// made by Parts. An empty group is no group.
func GroupKey(group, rule string, parts ...string) Key {
	return Key{Group: group, Rule: rule, Rest: Parts(parts...)}
}

// RawKey returns the key whose encoding is s, for a program that names
// its keys itself. It has no rule and no group.
func RawKey(s string) Key { return Key{Rest: s} }

// Parts encodes parts as a Key encodes them, each as its length, a colon
// and its bytes; "" for none.
func Parts(parts ...string) string {
	if len(parts) == 0 {
		return ""
	}
	n := 0
	for _, p := range parts {
		n += len(p) + 4
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = appendPart(b, p)
	}
	return string(b)
}

// Len returns the length of k's encoding.
func (k Key) Len() int {
	if k.Group == "" && k.Rule == "" {
		return len(k.Rest)
	}
	n := partLen(k.Rule) + len(k.Rest)
	if k.Group != "" {
		n += 1 + partLen(k.Group)
	}
	return n
}

// Append appends k's encoding to b: for a grouped key '@', the group as
// one part, then the rule as one part and Rest; for a key without a group
// the rule and Rest; for a raw key its Rest.
func (k Key) Append(b []byte) []byte {
	if k.Group == "" && k.Rule == "" {
		return append(b, k.Rest...)
	}
	if k.Group != "" {
		b = appendPart(append(b, '@'), k.Group)
	}
	return append(appendPart(b, k.Rule), k.Rest...)
}

// String returns k's encoding (Append), the key a store writes.
func (k Key) String() string {
	if k.Group == "" && k.Rule == "" {
		return k.Rest
	}
	var b strings.Builder
	b.Grow(k.Len())
	if k.Group != "" {
		b.WriteByte('@')
		writePart(&b, k.Group)
	}
	writePart(&b, k.Rule)
	b.WriteString(k.Rest)
	return b.String()
}

// Ungrouped returns the encoding of k without its group: what follows the
// group in k's encoding, the rule and Rest.
func (k Key) Ungrouped() string { return Key{Rule: k.Rule, Rest: k.Rest}.String() }

func partLen(s string) int {
	n := len(s) + 2
	for l := len(s); l >= 10; l /= 10 {
		n++
	}
	return n
}

func appendPart(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	return append(append(b, ':'), s...)
}

func writePart(b *strings.Builder, s string) {
	var n [20]byte
	b.Write(strconv.AppendInt(n[:0], int64(len(s)), 10))
	b.WriteByte(':')
	b.WriteString(s)
}

// Wire returns k as a message carries it between instances (a reset the
// Redis store announces): its four fields as parts, Group, Rule, Rest and
// Listed ("1" or ""), each its length, a colon and its bytes. ParseWire
// reads it back exactly; unlike the encoding a store writes, it keeps a
// raw key apart from a structured one with the same bytes.
func (k Key) Wire() string {
	listed := ""
	if k.Listed {
		listed = "1"
	}
	return Parts(k.Group, k.Rule, k.Rest, listed)
}

// ParseWire returns the key that Wire wrote as s; ok is false for
// anything else.
func ParseWire(s string) (k Key, ok bool) {
	var f [4]string
	for i := range f {
		n, rest, found := strings.Cut(s, ":")
		size, err := strconv.Atoi(n)
		if !found || err != nil || size < 0 || size > len(rest) || n != strconv.Itoa(size) {
			return Key{}, false
		}
		f[i], s = rest[:size], rest[size:]
	}
	if s != "" || f[3] != "" && f[3] != "1" {
		return Key{}, false
	}
	return Key{Group: f[0], Rule: f[1], Rest: f[2], Listed: f[3] == "1"}, true
}
