package fastfront

import "testing"

// TestSaneRequestID: 1 to 128 visible ASCII characters are kept.
func TestSaneRequestID(t *testing.T) {
	for id, want := range map[string]bool{"a": true, "req-1:x/y=z": true, "": false, "a b": false, "a\tb": false,
		"é": false, string(make([]byte, 129)): false, "\x7f": false} {
		if got := saneRequestID([]byte(id)); got != want {
			t.Errorf("saneRequestID(%q) = %v, want %v", id, got, want)
		}
	}
	ids := newRequestIDs()
	a, b := string(ids.next(nil)), string(ids.next(nil))
	if len(a) != 32 || a == b || a[:16] != b[:16] {
		t.Errorf("ids %q, %q: want 32 hex digits each, one prefix, different", a, b)
	}
}
