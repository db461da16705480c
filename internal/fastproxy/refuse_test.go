package fastproxy_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// req writes one HTTP/1.1 request: line is "METHOD target", fields are
// "Name: value" lines written as given; Host: x comes first.
func req(line string, fields ...string) string {
	return line + " HTTP/1.1\r\nHost: x\r\n" + strings.Join(append(fields, ""), "\r\n") + "\r\n"
}

// TestSmuggling: request framings an attacker writes by hand, on a real
// socket. Each is refused, or read one way only and sent on re-framed;
// what follows a refused request on its connection is never served.
func TestSmuggling(t *testing.T) {
	big := strings.Repeat("b", 70<<10)
	cases := []struct {
		name   string
		send   string
		status []int
		// received is what the upstream got, "METHOD target body=N"; nil:
		// nothing.
		received []string
	}{
		{"CL+TE refused", req("POST /u", "Content-Length: 4", "Transfer-Encoding: chunked") + "0\r\n\r\n" + req("GET /smuggled"),
			[]int{400}, nil},
		{"TE+CL refused", req("POST /u", "Transfer-Encoding: chunked", "Content-Length: 3") + "1\r\nA\r\n0\r\n\r\n",
			[]int{400}, nil},
		{"conflicting Content-Length", req("POST /u", "Content-Length: 4", "Content-Length: 5") + "abcde", []int{400}, nil},
		{"repeated Content-Length", req("POST /u", "Content-Length: 4", "Content-Length: 4") + "abcd", []int{400}, nil},
		{"Content-Length list", req("POST /u", "Content-Length: 4, 4") + "abcd", []int{400}, nil},
		{"signed Content-Length", req("POST /u", "Content-Length: +4") + "abcd", []int{400}, nil},
		{"negative Content-Length", req("POST /u", "Content-Length: -1") + "abcd", []int{400}, nil},
		{"Transfer-Encoding xchunked", req("POST /u", "Transfer-Encoding: xchunked") + "0\r\n\r\n", []int{400}, nil},
		{"Transfer-Encoding gzip, chunked", req("POST /u", "Transfer-Encoding: gzip, chunked") + "0\r\n\r\n", []int{400}, nil},
		{"Transfer-Encoding twice", req("POST /u", "Transfer-Encoding: chunked", "Transfer-Encoding: chunked") + "0\r\n\r\n",
			[]int{400}, nil},
		{"Transfer-Encoding with a space before the colon", req("POST /u", "Transfer-Encoding : chunked") + "0\r\n\r\n",
			[]int{400}, nil},
		{"Transfer-Encoding on HTTP/1.0", "POST /u HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
			[]int{400}, nil},
		{"upper-case chunked read as chunked", req("POST /u", "Transfer-Encoding: CHUNKED") + "1\r\nA\r\n0\r\n\r\n",
			[]int{200}, []string{"POST /u body=1"}},
		{"space before the colon", req("GET /u", "X-API-Key : k"), []int{400}, nil},
		{"two Host fields", req("GET /u", "Host: y"), []int{400}, nil},
		{"no Host on HTTP/1.1", "GET /u HTTP/1.1\r\n\r\n", []int{400}, nil},
		{"absolute-form naming another host than Host", req("GET http://y/u"), []int{400}, nil},
		{"absolute-form naming a user", req("GET http://u:p@x/u"), []int{400}, nil},
		{"absolute-form naming Host otherwise", req("GET HTTP://X.:8080/u?q"), []int{200}, []string{"GET /u?q body=0"}},
		{"HTTP/1.2", "GET /u HTTP/1.2\r\nHost: x\r\n\r\n", []int{505}, nil},
		{"HTTP/2.0 request line", "GET /u HTTP/2.0\r\nHost: x\r\n\r\n", []int{505}, nil},
		{"HTTP/0.9", "GET /u\r\n\r\n", []int{400}, nil},
		{"NUL in a field", req("GET /u", "X-A: a\x00b"), []int{400}, nil},
		{"bare CR in a field", req("GET /u", "X-A: a\rb"), []int{400}, nil},
		{"oversized header", req("GET /u", "X-Big: "+big), []int{431}, nil},
		{"obs-fold read as one field", "GET /u HTTP/1.1\r\nHost: x\r\nX-Note: a\r\n b\r\n\r\n",
			[]int{200}, []string{"GET /u body=0"}},
		{"pipelined requests each served", req("GET /1") + req("POST /2", "Content-Length: 3") + "abc" + req("GET /3"),
			[]int{200, 200, 200}, []string{"GET /1 body=0", "POST /2 body=3", "GET /3 body=0"}},
		{"broken chunk size", req("POST /u", "Transfer-Encoding: chunked") + "0x1\r\nA\r\n0\r\n\r\n", []int{400}, nil},
		{"trailer not sent on", req("POST /u", "Transfer-Encoding: chunked") + "1\r\nA\r\n0\r\nX-API-Key: z\r\n\r\n",
			[]int{200}, []string{"POST /u body=1"}},
		// Issue 15 item 8: a header block whose end is a bare LF is
		// refused, also when a CRLF CRLF after it lets fasthttp read it
		// (alone, the server refuses it: TestHeaderEnd, gateway's
		// TestBareLFHeaderEnd); other line ends of a bare LF are read.
		{"header block ended by a bare LF, a request after it", "GET /1 HTTP/1.1\nHost: x\n\n" + req("GET /2"), []int{400}, nil},
		{"last field's line a bare LF", "GET /1 HTTP/1.1\r\nHost: x\n\r\n" + req("GET /2"), []int{400}, nil},
		{"bare LF line ends, CRLF CRLF end", "GET /1 HTTP/1.1\nHost: x\nX-A: a\r\n\r\n", []int{200}, []string{"GET /1 body=0"}},
		// Issue 15 item 11: a Connection list is read at most
		// MaxConnectionNames names far.
		{"Connection naming 32 fields", req("GET /u", "Connection: "+names(32), "X-API-Key: k"),
			[]int{200}, []string{"GET /u body=0"}},
		{"Connection naming 33 fields", req("GET /u", "Connection: "+names(33)), []int{400}, nil},
		{"Connection fields naming 33 fields together", req("GET /u", "Connection: "+names(20), "Connection: ,, "+names(13)),
			[]int{400}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := newUpstream(t, nil)
			s := startStand(t, mustURL(t, up.URL), standOptions{fwd: xff})
			if got := statuses(s.exchange(t, c.send)); !slices.Equal(got, c.status) {
				t.Errorf("statuses %v, want %v", got, c.status)
			}
			var got []string
			up.mu.Lock()
			for _, r := range up.got {
				got = append(got, r.line+" body="+itoa(r.body))
				if r.header.Get("X-Api-Key") != "" {
					t.Errorf("%s: X-API-Key %q went on", r.line, r.header.Get("X-Api-Key"))
				}
			}
			up.mu.Unlock()
			if !slices.Equal(got, c.received) {
				t.Errorf("the upstream received %q, want %q", got, c.received)
			}
		})
	}
}

// names lists n field names, X-API-Key last: "x-1, ..., X-API-Key".
func names(n int) string {
	var b strings.Builder
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "x-%d, ", i)
	}
	return b.String() + "X-API-Key"
}

// TestSlowHeaders: headers that do not arrive within the header timeout
// are answered 408 and the connection closed.
func TestSlowHeaders(t *testing.T) {
	up := newUpstream(t, nil)
	s := startStand(t, mustURL(t, up.URL), standOptions{fwd: xff, headerTimeout: 200 * time.Millisecond})
	c := dial(t, s)
	_, _ = c.Write([]byte("GET /u HTTP/1.1\r\nHost: x\r\n")) // and never the end
	rs := readReplies(t, bufioReader(c))
	if got := statuses(rs); !slices.Equal(got, []int{408}) {
		t.Errorf("statuses %v, want [408]", got)
	}
	if up.count() != 0 {
		t.Errorf("the upstream received %d requests", up.count())
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
