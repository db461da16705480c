package config

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Error is one problem in a configuration file. Line and Col are 1-based;
// Col is 0 when only the line is known, and Line is 0 for a problem with the
// whole file (empty, too large, unreadable as YAML at an unknown place).
type Error struct {
	File string
	Line int
	Col  int
	// Msg is the problem, after its field's path when it has one
	// ("rules[0].rate: ...").
	Msg string
	// Field is the path of the field at fault, as Msg begins with it
	// ("rules[0].rate", "clients.list[1].keys[0]"); "" for a problem with
	// the file (its syntax, its size) rather than one field.
	Field string
}

// Problem is Msg without the field's path that begins it.
func (e *Error) Problem() string {
	if e.Field == "" {
		return e.Msg
	}
	return strings.TrimPrefix(e.Msg, e.Field+": ")
}

// Error formats e as "FILE:line:col: msg", leaving out a position part that
// is not known ("FILE:line: msg", "FILE: msg").
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
		if e.Col > 0 {
			b.WriteString(":" + strconv.Itoa(e.Col))
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in a file, sorted by position. Parse and
// Load return it (as a value) whenever the file's content is at fault.
type Errors []*Error

// Error returns one problem per line.
func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// sortErrors orders es by position and drops exact repeats.
func sortErrors(es Errors) Errors {
	slices.SortStableFunc(es, func(a, b *Error) int {
		if c := cmp.Compare(a.Line, b.Line); c != 0 {
			return c
		}
		return cmp.Compare(a.Col, b.Col)
	})
	return slices.CompactFunc(es, func(a, b *Error) bool { return *a == *b })
}
