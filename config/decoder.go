package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// decoder walks the YAML tree, collecting every problem with its position.
//
// Paths name fields the way policy.FieldError does: "rules[2].rate",
// "clients.list[0].keys[1]", "plans.large.claims". The decoder remembers the
// node of every path it visits, so that problems policy.Compile finds can be
// pointed at, and the paths whose value it could not decode, so that Compile
// does not report them a second time.
type decoder struct {
	file   string
	errs   Errors
	warns  Errors                // dangerous but workable settings
	nodes  map[string]*yaml.Node // path -> value node
	keys   map[string]*yaml.Node // path -> key node, for mapping entries
	failed map[string]bool       // paths already reported
	// rateless are the rules whose rate was given but could not be
	// decoded, by path ("rules[0]") to name: what policy.Compile then says
	// of their overrides and limits follows from that one problem.
	rateless map[string]string
	// storeType, in an envoyproxy/ratelimit rule file, is the type of the
	// store that will decide it ("": not known), whose algorithms it keeps.
	storeType string
	// running, in a configuration file read for a reload, is the store in
	// force, which stays until a restart (nil: none yet).
	running *Store
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, nodes: map[string]*yaml.Node{}, keys: map[string]*yaml.Node{}, failed: map[string]bool{}, rateless: map[string]string{}}
}

// errorf reports a problem at node n (the whole file if n is nil). A
// non-empty path prefixes the message.
func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, d.problem(n, path, format, args...))
}

// warnf reports, at node n, a setting that works but is dangerous: Parse
// returns it in File.Warnings, `sluice check` prints it and `sluice serve`
// logs it. A non-empty path prefixes the message.
func (d *decoder) warnf(n *yaml.Node, path, format string, args ...any) {
	d.warns = append(d.warns, d.problem(n, path, format, args...))
}

// problem formats a message at node n (the whole file if n is nil).
func (d *decoder) problem(n *yaml.Node, path, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	e := &Error{File: d.file, Msg: msg, Field: path}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	return e
}

// fail reports a problem with the value at path and marks the path failed.
func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.failed[path] = true
	d.errorf(n, path, format, args...)
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a value"
}

// usable reports whether n can be decoded: present, not null, not an alias
// (aliases are reported once, by checkAliases).
func (d *decoder) usable(n *yaml.Node, path string) bool {
	if isNull(n) {
		return false
	}
	if n.Kind == yaml.AliasNode {
		d.failed[path] = true
		return false
	}
	return true
}

// checkAliases reports every YAML alias in the tree under n. sluice does not
// expand aliases: a configuration is short, and expansion is how small files
// turn into huge ones.
func (d *decoder) checkAliases(n *yaml.Node) {
	stack := []*yaml.Node{n}
	for len(stack) > 0 {
		n, stack = stack[len(stack)-1], stack[:len(stack)-1]
		if n.Kind == yaml.AliasNode {
			d.errorf(n, "", "alias *%s: YAML aliases are not supported (write the value out in full)", clip(n.Value))
		}
		stack = append(stack, n.Content...)
	}
}

// entry is one key and its value in a YAML mapping.
type entry struct{ key, val *yaml.Node }

// entries returns the entries of mapping n, reporting keys that are not
// plain names and keys given twice (the first one is kept). what describes
// the mapping for the message when n is not one. A null n has no entries.
func (d *decoder) entries(n *yaml.Node, path, what string) ([]entry, bool) {
	if !d.usable(n, path) {
		return nil, !d.failed[path]
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want %s, not %s", what, kindName(n))
		return nil, false
	}
	d.nodes[path] = n
	var out []entry
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case k.Kind != yaml.ScalarNode || isNull(k):
			d.errorf(k, path, "a key must be a plain name, not %s", kindName(k))
		case k.Value == "<<":
			d.errorf(k, path, "merge keys (<<) are not supported (write the fields out in full)")
		case seen[k.Value] != nil:
			d.errorf(k, path, "duplicate key %q (first at line %d)", clip(k.Value), seen[k.Value].Line)
		default:
			seen[k.Value] = k
			d.nodes[join(path, k.Value)], d.keys[join(path, k.Value)] = v, k
			out = append(out, entry{k, v})
		}
	}
	return out, true
}

// fields returns the fields of mapping n by name, reporting any field not in
// accepted.
func (d *decoder) fields(n *yaml.Node, path, what string, accepted []string) map[string]*yaml.Node {
	es, _ := d.entries(n, path, what)
	m := make(map[string]*yaml.Node, len(es))
	for _, e := range es {
		if !slices.Contains(accepted, e.key.Value) {
			d.errorf(e.key, path, "unknown field %q (%saccepted: %s)", clip(e.key.Value), didYouMean(e.key.Value, accepted), strings.Join(accepted, ", "))
			continue
		}
		m[e.key.Value] = e.val
	}
	return m
}

// required reports a missing required field of the mapping at path.
func (d *decoder) required(m map[string]*yaml.Node, parent *yaml.Node, path, name, example string) bool {
	if !isNull(m[name]) {
		return true
	}
	at := parent
	if k := d.keys[join(path, name)]; k != nil { // present, but empty
		at = k
	}
	d.fail(at, join(path, name), "missing (required; such as %s)", example)
	return false
}

// list returns the items of sequence n (none if n is null).
func (d *decoder) list(n *yaml.Node, path, what string) []*yaml.Node {
	if !d.usable(n, path) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "want a list of %s, not %s", what, kindName(n))
		return nil
	}
	d.nodes[path] = n
	for i, item := range n.Content {
		d.nodes[index(path, i)] = item
	}
	return n.Content
}

// scalar returns the text of scalar n; ok is false if n is absent or not a
// usable scalar (reported).
func (d *decoder) scalar(n *yaml.Node, path, want string) (string, bool) {
	if !d.usable(n, path) {
		return "", false
	}
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "want %s, not %s", want, kindName(n))
		return "", false
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") || n.Tag == "!!binary" {
		d.fail(n, path, "YAML tag %s is not supported (want %s)", clip(n.Tag), want)
		return "", false
	}
	return n.Value, true
}

// str returns the string at n, or def if absent.
func (d *decoder) str(n *yaml.Node, path, want, def string) string {
	if s, ok := d.scalar(n, path, want); ok {
		return s
	}
	return def
}

// integer returns the whole number at n, between lo and hi, or def if n is
// absent or wrong (reported).
func (d *decoder) integer(n *yaml.Node, path string, lo, hi, def int64, accepted string) int64 {
	s, ok := d.scalar(n, path, "a whole number")
	if !ok {
		return def
	}
	v, err := parseInt(s)
	switch {
	case err != nil:
		d.fail(n, path, "%q is not a whole number (%s)", clip(s), accepted)
	case v < lo || v > hi:
		d.fail(n, path, "%s is out of range (%s)", clip(s), accepted)
	default:
		return v
	}
	return def
}

// parseInt parses a decimal whole number: an optional '-' and digits, no
// '+', no separators, no other bases.
func parseInt(s string) (int64, error) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, strconv.ErrSyntax
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil && len(digits) > 0 {
		// Too many digits for int64: far out of any range.
		if s[0] == '-' {
			return -1 << 63, nil
		}
		return 1<<63 - 1, nil
	}
	return v, nil
}

// boolean returns the true or false at n, or false if absent.
func (d *decoder) boolean(n *yaml.Node, path string) bool {
	s, ok := d.scalar(n, path, "true or false")
	if !ok {
		return false
	}
	switch s {
	case "true":
		return true
	case "false":
		return false
	}
	d.fail(n, path, "%q is not a boolean (true or false)", clip(s))
	return false
}

// oneOf returns the value at n, which must be one of accepted, or def.
func (d *decoder) oneOf(n *yaml.Node, path, def string, accepted []string) string {
	s, ok := d.scalar(n, path, "one of "+strings.Join(accepted, ", "))
	if !ok {
		return def
	}
	if slices.Contains(accepted, s) {
		return s
	}
	d.fail(n, path, "unknown value %q (%saccepted: %s)", clip(s), didYouMean(s, accepted), strings.Join(accepted, ", "))
	return def
}

// clip shortens s for a message.
func clip(s string) string {
	const most = 64
	if len(s) <= most {
		return s
	}
	cut := most
	for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	return s[:cut] + "..."
}
