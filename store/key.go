package store

import (
	"strconv"
	"strings"
	"unsafe"
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
	// Listed marks a key that counts one of the clients a policy lists
	// (a key: client rule, for a caller with a client id). Such keys are
	// bounded by the policy, not by the callers, so a bounded store keeps
	// room for them whatever else arrives (the memory store does).
	Listed bool
	// enc is the key's encoding, made once by NewKey, GroupKey, RawKey
	// and ParseWire, so that a store asked for the key again and again
	// never encodes it again; the rest of the key (Rest) is its end. Keys
	// are made by those functions: a Key written as a literal has no rest.
	enc string
}

// NewKey returns the key of rule for the parts that identify what it
// counts (a client id, an IP prefix, a header value), encoded once.
func NewKey(rule string, parts ...string) Key { return build("", rule, parts, "") }

// GroupKey is NewKey for a key in group (see Key.Group), which should be
// made by Parts. An empty group is no group.
func GroupKey(group, rule string, parts ...string) Key { return build(group, rule, parts, "") }

// RawKey returns the key whose encoding is s, for a program that names
// its keys itself. It has no rule and no group.
func RawKey(s string) Key { return Key{enc: s} }

// build makes a key and its encoding in one allocation: the group and
// the rule as parts, then parts, then rest (already encoded).
func build(group, rule string, parts []string, rest string) Key {
	n := partLen(rule) + len(rest)
	if group != "" {
		n += 1 + partLen(group)
	}
	for _, p := range parts {
		n += partLen(p)
	}
	b := make([]byte, 0, n)
	if group != "" {
		b = appendPart(append(b, '@'), group)
	}
	b = appendPart(b, rule)
	for _, p := range parts {
		b = appendPart(b, p)
	}
	b = append(b, rest...)
	return Key{Group: group, Rule: rule, enc: unsafe.String(unsafe.SliceData(b), len(b))} // b is never written again
}

// Rest returns the rest of the key, as Parts encoded it: the rule's state
// tag and what it counts by; for a raw key, its whole encoding.
func (k Key) Rest() string {
	if k.Group == "" && k.Rule == "" {
		return k.enc
	}
	n := partLen(k.Rule)
	if k.Group != "" {
		n += 1 + partLen(k.Group)
	}
	if n > len(k.enc) { // a literal, not made by NewKey or GroupKey
		return ""
	}
	return k.enc[n:]
}

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
func (k Key) Len() int { return len(k.String()) }

// Append appends k's encoding to b: for a grouped key '@', the group as
// one part, then the rule as one part and Rest; for a key without a group
// the rule and Rest; for a raw key its Rest.
func (k Key) Append(b []byte) []byte { return append(b, k.String()...) }

// String returns k's encoding (Append), the key a store writes, made once
// by NewKey, GroupKey and RawKey.
func (k Key) String() string {
	if k.enc != "" || k.Group == "" && k.Rule == "" {
		return k.enc
	}
	return build(k.Group, k.Rule, nil, "").enc // a literal
}

// Ungrouped returns the encoding of k without its group: what follows the
// group in k's encoding, the rule and Rest.
func (k Key) Ungrouped() string {
	if k.Group == "" {
		return k.String()
	}
	return k.String()[1+partLen(k.Group):]
}

// Wire returns k as a message carries it between instances (a reset the
// Redis store announces): its fields as parts, Group, Rule, Rest and
// Listed ("1" or ""), each its length, a colon and its bytes. ParseWire
// reads it back exactly; unlike the encoding a store writes, it keeps a
// raw key apart from a structured one with the same bytes.
func (k Key) Wire() string {
	listed := ""
	if k.Listed {
		listed = "1"
	}
	return Parts(k.Group, k.Rule, k.Rest(), listed)
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
	if f[0] == "" && f[1] == "" {
		k = RawKey(f[2])
	} else {
		k = build(f[0], f[1], nil, f[2])
	}
	k.Listed = f[3] == "1"
	return k, true
}

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
