package httplimit_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// sfItem is one member of a structured-field list (RFC 8941) whose bare item
// is a string or token and whose parameters are integers, the shape of
// RateLimit and RateLimit-Policy.
type sfItem struct {
	Value  string
	Params map[string]int64
	Keys   []string // parameter keys in order
}

// parseSFList parses a structured-field list of such items strictly: any
// syntax RFC 8941 does not allow, a non-integer parameter or a repeated
// parameter is an error.
func parseSFList(s string) ([]sfItem, error) {
	p := &sfParser{s: s}
	p.skip(" ")
	var items []sfItem
	if p.eof() {
		return nil, nil
	}
	for {
		it, err := p.item()
		if err != nil {
			return nil, err
		}
		items = append(items, it)
		p.skip(" \t")
		if p.eof() {
			return items, nil
		}
		if p.s[p.i] != ',' {
			return nil, p.errorf("want ',' between members")
		}
		p.i++
		p.skip(" \t")
		if p.eof() {
			return nil, p.errorf("trailing comma")
		}
	}
}

type sfParser struct {
	s string
	i int
}

func (p *sfParser) eof() bool { return p.i >= len(p.s) }

func (p *sfParser) skip(set string) {
	for !p.eof() && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *sfParser) errorf(format string, args ...any) error {
	return fmt.Errorf("structured field %q at %d: %s", p.s, p.i, fmt.Sprintf(format, args...))
}

func (p *sfParser) item() (sfItem, error) {
	var it sfItem
	var err error
	switch c := p.s[p.i]; {
	case c == '"':
		it.Value, err = p.str()
	case isAlpha(c) || c == '*':
		it.Value = p.token()
	default:
		err = p.errorf("want a string or token")
	}
	if err != nil {
		return it, err
	}
	it.Params = map[string]int64{}
	for !p.eof() && p.s[p.i] == ';' {
		p.i++
		p.skip(" ")
		k, err := p.key()
		if err != nil {
			return it, err
		}
		if _, dup := it.Params[k]; dup {
			return it, p.errorf("parameter %q repeated", k)
		}
		if p.eof() || p.s[p.i] != '=' {
			return it, p.errorf("parameter %q has no integer value", k)
		}
		p.i++
		v, err := p.integer()
		if err != nil {
			return it, err
		}
		it.Params[k] = v
		it.Keys = append(it.Keys, k)
	}
	return it, nil
}

func (p *sfParser) str() (string, error) {
	var b strings.Builder
	for p.i++; !p.eof(); p.i++ {
		c := p.s[p.i]
		switch {
		case c == '\\':
			p.i++
			if p.eof() || (p.s[p.i] != '"' && p.s[p.i] != '\\') {
				return "", p.errorf("bad escape")
			}
			b.WriteByte(p.s[p.i])
		case c == '"':
			p.i++
			return b.String(), nil
		case c < 0x20 || c > 0x7e:
			return "", p.errorf("byte %#x in string", c)
		default:
			b.WriteByte(c)
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *sfParser) token() string {
	start := p.i
	for p.i++; !p.eof() && (isTchar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/'); p.i++ {
	}
	return p.s[start:p.i]
}

func (p *sfParser) key() (string, error) {
	start := p.i
	if p.eof() || !(p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] == '*') {
		return "", p.errorf("want a parameter key")
	}
	for p.i++; !p.eof(); p.i++ {
		c := p.s[p.i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("_-.*", c) >= 0) {
			break
		}
	}
	return p.s[start:p.i], nil
}

func (p *sfParser) integer() (int64, error) {
	start := p.i
	if !p.eof() && p.s[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	if n := p.i - digits; n < 1 || n > 15 {
		return 0, p.errorf("want an integer of 1 to 15 digits")
	}
	return strconv.ParseInt(p.s[start:p.i], 10, 64)
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isTchar(c byte) bool {
	return isAlpha(c) || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// mustSFList parses header value v (which must be a single field line).
func mustSFList(t *testing.T, name string, v []string) []sfItem {
	t.Helper()
	if len(v) != 1 {
		t.Fatalf("%s: %d field lines %q, want 1", name, len(v), v)
	}
	items, err := parseSFList(v[0])
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return items
}

// The parser itself, so that a header test failing means the header is wrong.
func TestParseSFList(t *testing.T) {
	good := []struct {
		in   string
		want string
	}{
		{`"claims";q=100;w=60`, `claims[q=100 w=60]`},
		{`"a";r=0;t=23, "b";r=-1;t=5`, `a[r=0 t=23] b[r=-1 t=5]`},
		{`  tok;q=1,"x\"y";q=2`, `tok[q=1] x"y[q=2]`},
	}
	for _, c := range good {
		items, err := parseSFList(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		var parts []string
		for _, it := range items {
			var ps []string
			for _, k := range it.Keys {
				ps = append(ps, fmt.Sprintf("%s=%d", k, it.Params[k]))
			}
			parts = append(parts, it.Value+"["+strings.Join(ps, " ")+"]")
		}
		if got := strings.Join(parts, " "); got != c.want {
			t.Errorf("%q: got %s, want %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{`"a";q=1,`, `"a" "b"`, `"a;q=1`, `"a";Q=1`, `"a";q`, `"a";q=1.5`, `"a";q=1;q=2`, `1;q=1`, `"a";q=1234567890123456`} {
		if _, err := parseSFList(bad); err == nil {
			t.Errorf("%q parsed, want an error", bad)
		}
	}
}
