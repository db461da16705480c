package client

import (
	"strconv"
	"strings"
)

// The RateLimit and RateLimit-Policy fields are Structured Field lists
// (RFC 9651, formerly RFC 8941). This file parses the part of that syntax
// they use: a list of items, each a bare item with parameters. Inner lists
// and syntax errors fail the whole field, as the RFC asks (the field is
// then ignored); bare items other than strings and tokens (numbers, byte
// sequences, booleans, dates) parse but name no policy, and parameters
// other than integers parse but carry no number.

// sfItem is one member of a list: a policy name (empty when the bare item
// is not a string or a token) and its integer parameters.
type sfItem struct {
	name   string
	params []sfParam
}

// sfParam is one parameter; ok is false when its value is not an integer
// (a decimal, a string, a token, a boolean ...).
type sfParam struct {
	key string
	val int64
	ok  bool
}

// param returns the integer value of parameter key, and whether it is
// present with an integer value. The last occurrence wins, as RFC 9651
// says of duplicate keys.
func (it sfItem) param(key string) (int64, bool) {
	var v int64
	found := false
	for _, p := range it.params {
		if p.key == key {
			v, found = p.val, p.ok
		}
	}
	return v, found
}

// Bounds on what a field may make the parser keep.
const (
	maxFieldLen = 8 << 10 // longer fields are ignored
	maxItems    = 32      // items beyond it are ignored
	maxParams   = 16      // per item; more fail the field
)

// sfParser walks one field value.
type sfParser struct {
	s string
	i int
}

// parseList parses a Structured Field list; ok is false when s is not one
// (or is longer than maxFieldLen). An empty s is an empty list.
func parseList(s string) (items []sfItem, ok bool) {
	if len(s) > maxFieldLen {
		return nil, false
	}
	p := sfParser{s: s}
	p.skipSP()
	for p.i < len(p.s) {
		it, ok := p.item()
		if !ok {
			return nil, false
		}
		if len(items) < maxItems {
			items = append(items, it)
		}
		p.skipOWS()
		if p.i == len(p.s) {
			return items, true
		}
		if p.s[p.i] != ',' {
			return nil, false
		}
		p.i++
		p.skipOWS()
		if p.i == len(p.s) {
			return nil, false // a trailing comma
		}
	}
	return items, true
}

// item parses a bare item and its parameters.
func (p *sfParser) item() (sfItem, bool) {
	var it sfItem
	if p.i < len(p.s) && p.s[p.i] == '(' {
		return it, false // an inner list: no RateLimit field has one
	}
	name, _, isName, ok := p.bareItem()
	if !ok {
		return it, false
	}
	if isName {
		it.name = name
	}
	for p.i < len(p.s) && p.s[p.i] == ';' {
		p.i++
		p.skipSP()
		k, ok := p.key()
		if !ok || len(it.params) == maxParams {
			return it, false
		}
		prm := sfParam{key: k}
		if p.i < len(p.s) && p.s[p.i] == '=' {
			p.i++
			_, v, isInt, ok := p.bareItemInt()
			if !ok {
				return it, false
			}
			prm.val, prm.ok = v, isInt
		}
		it.params = append(it.params, prm)
	}
	return it, true
}

// bareItem parses any bare item; isName reports a string or a token, whose
// text is s.
func (p *sfParser) bareItem() (s string, n int64, isName, ok bool) {
	if p.i == len(p.s) {
		return "", 0, false, false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		s, ok = p.str()
		return s, 0, true, ok
	case c == '*' || isAlpha(c):
		return p.token(), 0, true, true
	default:
		_, n, _, ok = p.bareItemInt()
		return "", n, false, ok
	}
}

// bareItemInt parses a bare item as a parameter value; isInt reports an
// integer, whose value is n.
func (p *sfParser) bareItemInt() (s string, n int64, isInt, ok bool) {
	if p.i == len(p.s) {
		return "", 0, false, false
	}
	switch c := p.s[p.i]; {
	case c == '-' || isDigit(c):
		return p.number()
	case c == '"':
		s, ok = p.str()
		return s, 0, false, ok
	case c == '*' || isAlpha(c):
		return p.token(), 0, false, true
	case c == ':':
		return "", 0, false, p.bytes()
	case c == '?':
		ok = p.i+1 < len(p.s) && (p.s[p.i+1] == '0' || p.s[p.i+1] == '1')
		p.i += 2
		return "", 0, false, ok
	case c == '@': // a date (RFC 9651): an integer of seconds
		p.i++
		if p.i == len(p.s) {
			return "", 0, false, false
		}
		_, _, isInt, ok = p.number()
		return "", 0, false, ok && isInt
	}
	return "", 0, false, false
}

// number parses an integer (at most 15 digits) or a decimal; isInt
// reports an integer.
func (p *sfParser) number() (s string, n int64, isInt, ok bool) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	digits, dot := 0, -1
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '.' && dot < 0 && digits > 0 && digits <= 12 {
			dot = digits
		} else if !isDigit(c) {
			break
		} else {
			digits++
		}
		p.i++
	}
	text := p.s[start:p.i]
	switch {
	case digits == 0, dot < 0 && digits > 15, dot >= 0 && (digits == dot || digits-dot > 3):
		return "", 0, false, false
	case dot >= 0:
		return text, 0, false, true
	}
	n, err := strconv.ParseInt(text, 10, 64)
	return text, n, err == nil, err == nil
}

// str parses an sf-string: printable ASCII between quotes, with \" and \\.
func (p *sfParser) str() (string, bool) {
	p.i++ // the opening quote
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '"':
			return b.String(), true
		case c == '\\':
			if p.i == len(p.s) || (p.s[p.i] != '"' && p.s[p.i] != '\\') {
				return "", false
			}
			b.WriteByte(p.s[p.i])
			p.i++
		case c < 0x20 || c > 0x7e:
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", false // no closing quote
}

// token parses an sf-token; the caller has seen its first character.
func (p *sfParser) token() string {
	start := p.i
	p.i++
	for p.i < len(p.s) && (isTchar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/') {
		p.i++
	}
	return p.s[start:p.i]
}

// bytes parses a byte sequence, :base64:, without decoding it.
func (p *sfParser) bytes() bool {
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		if c == ':' {
			return true
		}
		if !isAlpha(c) && !isDigit(c) && c != '+' && c != '/' && c != '=' {
			return false
		}
	}
	return false
}

// key parses a parameter key: lcalpha or '*', then lcalpha, digits, _-.*.
func (p *sfParser) key() (string, bool) {
	start := p.i
	if p.i == len(p.s) || !(p.s[p.i] == '*' || p.s[p.i] >= 'a' && p.s[p.i] <= 'z') {
		return "", false
	}
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		if !(c >= 'a' && c <= 'z' || isDigit(c) || c == '_' || c == '-' || c == '.' || c == '*') {
			break
		}
		p.i++
	}
	return p.s[start:p.i], true
}

func (p *sfParser) skipSP() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *sfParser) skipOWS() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isTchar reports an RFC 9110 token character.
func isTchar(c byte) bool {
	return isAlpha(c) || isDigit(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
