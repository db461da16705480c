// Package problem writes RFC 9457 problem details as JSON, the body of
// every application/problem+json answer sluice gives: the decision core's
// refusals (429, 403, 503, ...), and the gateway's and its transport's own
// (502, 504, 400 for a request sluice refuses to read). It imports only
// the standard library, so that every front, however low, writes the one
// body.
package problem

import (
	"strconv"
	"unicode/utf8"
)

// Problem is an RFC 9457 problem detail. Empty fields are left out, but
// Title and Status.
type Problem struct {
	// Type is the problem type's URI; "": none (about:blank).
	Type string
	// Title is the status's reason phrase (Too Many Requests).
	Title string
	// Status is the answer's status code.
	Status int
	// Detail says what happened, to the caller.
	Detail []byte
	// ViolatedPolicies are the names of the rules that refused
	// (violated-policies, as the quota-exceeded type defines it).
	ViolatedPolicies []string
	// Reason is a throttle's refusal: what is full (shed, queue_full, ...).
	Reason string
}

// Append appends the problem detail of an answer of status, its title and
// detail, as JSON to dst: the body of an application/problem+json answer
// (send it with Cache-Control: no-store), such as a gateway's own 502 or
// 504. title is the status's reason phrase (Bad Gateway).
func Append(dst []byte, status int, title, detail string) []byte {
	p := Problem{Title: title, Status: status, Detail: []byte(detail)}
	return p.AppendJSON(dst)
}

// AppendJSON appends p as JSON to b, written by hand, without
// encoding/json's reflection: a 429 is the answer sluice gives most often
// under attack. The body ends in a newline.
func (p *Problem) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	if p.Type != "" {
		b = appendJSONString(append(b, `"type":`...), p.Type)
		b = append(b, ',')
	}
	b = appendJSONString(append(b, `"title":`...), p.Title)
	b = strconv.AppendInt(append(b, `,"status":`...), int64(p.Status), 10)
	if len(p.Detail) > 0 {
		b = appendJSONString(append(b, `,"detail":`...), p.Detail)
	}
	if len(p.ViolatedPolicies) > 0 {
		b = append(b, `,"violated-policies":[`...)
		for i, v := range p.ViolatedPolicies {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, v)
		}
		b = append(b, ']')
	}
	if p.Reason != "" {
		b = appendJSONString(append(b, `,"reason":`...), p.Reason)
	}
	return append(b, '}', '\n')
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced, as encoding/json does.
func appendJSONString[T string | []byte](b []byte, s T) []byte {
	b = append(b, '"')
	for len(s) > 0 {
		n := plainJSON(s)
		b, s = append(b, s[:n]...), s[n:] // the plain run, copied whole
		if len(s) > 0 {
			// an invalid byte is U+FFFD; a rune's few bytes are converted on the stack
			r, size := utf8.DecodeRuneInString(string(s[:min(len(s), utf8.UTFMax)]))
			b, s = appendJSONRune(b, r), s[size:]
		}
	}
	return append(b, '"')
}

// plainJSON returns the length of s's leading run of printable ASCII that
// JSON (as encoding/json writes it) carries unescaped: most of a problem
// body, copied whole rather than rune by rune.
func plainJSON[T string | []byte](s T) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return i
		}
	}
	return len(s)
}

// appendJSONRune appends r inside a JSON string, escaped as encoding/json
// escapes it.
func appendJSONRune(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	switch {
	case r == '"' || r == '\\':
		return append(b, '\\', byte(r))
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029:
		return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
	}
	return utf8.AppendRune(b, r)
}
