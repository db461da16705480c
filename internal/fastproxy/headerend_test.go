package fastproxy_test

import (
	"testing"

	"github.com/sluice-rl/sluice/internal/fastproxy"
)

// TestHeaderEnd (issue 15 item 8): a header block whose empty line ends
// in a bare LF, with no CRLF CRLF after it, is one fasthttp would wait on;
// each is fed in every split in two, as reads may deliver it.
func TestHeaderEnd(t *testing.T) {
	for _, c := range []struct {
		name  string
		bytes string
		stuck bool
	}{
		{"all bare LF", "GET /t HTTP/1.1\nHost: x\n\n", true},
		{"empty line a bare LF", "GET /t HTTP/1.1\r\nHost: x\r\n\n", true},
		{"last field's line a bare LF", "GET /t HTTP/1.1\r\nHost: x\n\r\n", true},
		{"HTTP/1.0 without fields", "GET /t HTTP/1.0\n\n", true},
		{"a body after it", "POST /t HTTP/1.1\nHost: x\nContent-Length: 3\n\nabc", true},
		{"CRLF", "GET /t HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"request line a bare LF, CRLF CRLF end", "GET /t HTTP/1.1\nHost: x\r\n\r\n", false},
		{"not ended yet", "GET /t HTTP/1.1\r\nHost: x\r\n", false},
		{"a CRLF CRLF after it: fasthttp reads it", "GET /t HTTP/1.1\nHost: x\n\nGET /u HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"a body with bare LFs after a CRLF end", "POST /t HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n\n\n\n\n", false},
	} {
		for i := 0; i <= len(c.bytes); i++ {
			var h fastproxy.HeaderEnd
			h.Begin()
			h.See([]byte(c.bytes[:i]))
			h.See([]byte(c.bytes[i:]))
			if h.Stuck() != c.stuck {
				t.Errorf("%s, split at %d: Stuck %v, want %v", c.name, i, h.Stuck(), c.stuck)
			}
		}
	}
	var h fastproxy.HeaderEnd
	h.See([]byte("GET /t HTTP/1.1\nHost: x\n\n"))
	if h.Stuck() {
		t.Error("the zero HeaderEnd watched")
	}
	h.Begin()
	h.See([]byte("GET /t HTTP/1.1\nHost: x\n\n"))
	h.Done()
	if h.Stuck() {
		t.Error("stuck after Done")
	}
	h.Begin()
	if h.Stuck() {
		t.Error("stuck after Begin: what came before it counts")
	}
}
