package gateway

import (
	"encoding/json"
	"testing"
)

// TestAppendString: what appendString writes reads back, as JSON, as the
// text it was given (bytes that are not UTF-8 as U+FFFD).
func TestAppendString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/claims/7", "/claims/7"},
		{`a"b\c`, `a"b\c`},
		{"tab\there\nnl\x00\x7f", "tab\there\nnl\x00\x7f"},
		{"caf\u00e9 \u2028", "caf\u00e9 \u2028"},
		{"bad\xff\xfeend", "bad\ufffd\ufffdend"},
		{"", ""},
	} {
		b := appendString(nil, []byte(tc.in))
		var got string
		if err := json.Unmarshal(b, &got); err != nil || got != tc.want {
			t.Errorf("appendString(%q) = %s: reads back %q, %v; want %q", tc.in, b, got, err, tc.want)
		}
	}
}
