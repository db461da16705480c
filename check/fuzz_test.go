package check

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzOriginal: whatever a proxy or a caller puts in the four headers,
// original never panics, and what it accepts is a method token and a path
// without a query, taken from the headers it was given.
func FuzzOriginal(f *testing.F) {
	f.Add("GET", "/claims/7?full=1", "", "")
	f.Add("", "", "POST", "/claims")
	f.Add("GET", "/a", "GET", "/a")
	f.Add("GET", "/a", "PUT", "/b")
	f.Add("G\x00T", "*", "", "http://x/")
	f.Fuzz(func(t *testing.T, om, ou, fm, fu string) {
		h := http.Header{}
		for name, v := range map[string]string{OriginalMethod: om, OriginalURI: ou, ForwardedMethod: fm, ForwardedURI: fu} {
			if v != "" {
				h[name] = []string{v}
			}
		}
		method, path, detail := original(h)
		if detail != "" {
			if method != "" || path != "" {
				t.Fatalf("refused (%s) but gave %q %q", detail, method, path)
			}
			return
		}
		if !validMethod(method) || (method != om && method != fm) {
			t.Fatalf("method %q from %q, %q", method, om, fm)
		}
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "? \x00") ||
			!strings.HasPrefix(ou, path) && !strings.HasPrefix(fu, path) {
			t.Fatalf("path %q from %q, %q", path, ou, fu)
		}
	})
}

// FuzzHeaderSafe: the problem body in X-Sluice-Problem is one line of
// visible ASCII, and a JSON body stays the same JSON value.
func FuzzHeaderSafe(f *testing.F) {
	f.Add([]byte(`{"detail":"partner-ä exceeded 😀","status":429}` + "\n"))
	f.Add([]byte("{\n\t\"a\": \"\\u0000\"\r\n}"))
	f.Add([]byte("\xff\xfe not JSON"))
	f.Fuzz(func(t *testing.T, body []byte) {
		s := headerSafe(body)
		for i := 0; i < len(s); i++ {
			if s[i] < ' ' || s[i] > '~' {
				t.Fatalf("byte %#x at %d of %q", s[i], i, s)
			}
		}
		var in, out any
		if !utf8.Valid(body) || json.Unmarshal(body, &in) != nil {
			return
		}
		if err := json.Unmarshal([]byte(s), &out); err != nil || !reflect.DeepEqual(in, out) {
			t.Fatalf("%q became %q (%v)", body, s, err)
		}
	})
}
