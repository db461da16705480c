package store

import (
	"strconv"
	"strings"
	"unsafe"
)

// Key names the state of one limited thing: a rule's counter for one
// caller, or for all callers together. It is structure a store reads
// without parsing — the Redis store takes its Cluster hash tag from Group,
// the memory store its overflow counter from Rule and its reserved room
// from Listed — and its encoding (String, Append), made once as the key
// is made, in the one allocation NewKey and GroupKey make, so that no
// store encodes a key per decision. The zero Key is the raw key "".
//
// Every part is written as its length, a colon and its bytes, so no two
// different keys have the same encoding: ("a_b", "c") and ("a", "b_c")
// stay apart, a grouped key (its encoding starts with '@') never equals
// an ungrouped one (it starts with a digit). A raw key (RawKey) is bytes
// a program made itself, with no group and no rule.
//
// A Key is 32 bytes of four fields, which the compiler keeps in registers:
// passed by value to a store it costs what a string did.
type Key struct {
	enc   string // the encoding
	group uint32 // the group's length
	rule  uint32 // the rule's length
	flags uint8  // grouped, structured, listed
}

const (
	keyGrouped    = 1 << iota // the encoding starts with the group
	keyStructured             // not a raw key: the encoding holds a rule
	keyListed                 // Listed
)

// NewKey returns the key of rule for the parts that identify what it
// counts (a client id, an IP prefix, a header value).
func NewKey(rule string, parts ...string) Key { return build("", rule, parts, "") }

// GroupKey is NewKey for a key in group: the caller it counts, which
// should be made by Parts (such as Parts("client", id)). A store may place
// a group's keys together: the Redis store makes the group the key's hash
// tag, which puts all of one caller's keys on one Cluster node and lets
// their rules be decided in one script call. An empty group is no group.
func GroupKey(group, rule string, parts ...string) Key { return build(group, rule, parts, "") }

// RawKey returns the key whose encoding is s, for a program that names
// its keys itself. It has no rule and no group.
func RawKey(s string) Key { return Key{enc: s} }

// build makes a key and its encoding in one allocation: the group and
// the rule as parts, then parts, then rest (already encoded).
func build(group, rule string, parts []string, rest string) Key {
	n := partLen(len(rule)) + len(rest)
	if group != "" {
		n += 1 + partLen(len(group))
	}
	for _, p := range parts {
		n += partLen(len(p))
	}
	b := make([]byte, 0, n)
	k := Key{group: uint32(len(group)), rule: uint32(len(rule)), flags: keyStructured}
	if group != "" {
		b = appendPart(append(b, '@'), group)
		k.flags |= keyGrouped
	}
	b = appendPart(b, rule)
	for _, p := range parts {
		b = appendPart(b, p)
	}
	b = append(b, rest...)
	k.enc = unsafe.String(unsafe.SliceData(b), len(b)) // b is never written again
	return k
}

// Listed returns k marked as counting one of the clients a policy lists
// (a key: client rule, for a caller with a client id). Such keys are
// bounded by the policy, not by the callers, so a bounded store keeps room
// for them whatever else arrives (the memory store does). The mark is no
// part of the encoding.
func (k Key) Listed() Key {
	k.flags |= keyListed
	return k
}

// IsListed reports whether k is marked Listed.
func (k Key) IsListed() bool { return k.flags&keyListed != 0 }

// groupEnd is where k's group part ends in its encoding (0 without one).
func (k Key) groupEnd() int {
	if k.flags&keyGrouped == 0 {
		return 0
	}
	return 1 + partLen(int(k.group))
}

// Group returns the caller k counts, as Parts encoded it, or "" for a key
// that counts no one caller.
func (k Key) Group() string {
	if k.flags&keyGrouped == 0 {
		return ""
	}
	end := k.groupEnd()
	return k.enc[end-int(k.group) : end]
}

// Rule returns the name of the rule whose state k is; "" for a raw key.
func (k Key) Rule() string {
	if k.flags&keyStructured == 0 {
		return ""
	}
	end := k.groupEnd() + partLen(int(k.rule))
	return k.enc[end-int(k.rule) : end]
}

// Rest returns the rest of the key, as Parts encoded it: the rule's state
// tag and what it counts by; for a raw key, its whole encoding.
func (k Key) Rest() string {
	if k.flags&keyStructured == 0 {
		return k.enc
	}
	return k.enc[k.groupEnd()+partLen(int(k.rule)):]
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
func (k Key) Len() int { return len(k.enc) }

// Append appends k's encoding to b: for a grouped key '@', the group as
// one part, then the rule as one part and Rest; for a key without a group
// the rule and Rest; for a raw key its Rest.
func (k Key) Append(b []byte) []byte { return append(b, k.enc...) }

// String returns k's encoding, the key a store writes.
func (k Key) String() string { return k.enc }

// Ungrouped returns the encoding of k without its group: what follows the
// group in k's encoding, the rule and Rest.
func (k Key) Ungrouped() string { return k.enc[k.groupEnd():] }

// Wire returns k as a message carries it between instances (a reset the
// Redis store announces): its group, rule, rest and listed mark ("1" or
// "") as parts, each its length, a colon and its bytes. ParseWire reads
// it back exactly; unlike the encoding a store writes, it keeps a raw key
// apart from a structured one with the same bytes.
func (k Key) Wire() string {
	listed, kind := "", "raw"
	if k.IsListed() {
		listed = "1"
	}
	if k.flags&keyStructured != 0 {
		kind = "key"
	}
	return Parts(kind, k.Group(), k.Rule(), k.Rest(), listed)
}

// ParseWire returns the key that Wire wrote as s; ok is false for
// anything else.
func ParseWire(s string) (k Key, ok bool) {
	var f [5]string
	for i := range f {
		n, rest, found := strings.Cut(s, ":")
		size, err := strconv.Atoi(n)
		if !found || err != nil || size < 0 || size > len(rest) || n != strconv.Itoa(size) {
			return Key{}, false
		}
		f[i], s = rest[:size], rest[size:]
	}
	switch {
	case s != "" || f[4] != "" && f[4] != "1":
		return Key{}, false
	case f[0] == "raw" && f[1] == "" && f[2] == "":
		k = RawKey(f[3])
	case f[0] == "key":
		k = build(f[1], f[2], nil, f[3])
	default:
		return Key{}, false
	}
	if f[4] == "1" {
		k = k.Listed()
	}
	return k, true
}

// partLen is the length of a part of n bytes as appendPart writes it:
// its length in decimal, a colon and the bytes.
func partLen(n int) int {
	l := n + 2
	for ; n >= 10; n /= 10 {
		l++
	}
	return l
}

func appendPart(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	return append(append(b, ':'), s...)
}
