package gateway_test

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// Request smuggling: framings that two HTTP readers may read apart (where
// a body ends, how many requests a connection carries, which Host), written
// by hand. Each is refused, or read one way only and sent on re-framed: a
// request hidden in another's body never reaches the upstream uncounted.
// docs/security.md lists them.
var smuggling = []attack{
	{name: "Content-Length twice, same value", prime: primeA,
		send:   request("POST /upload", withB, "Content-Length: 4", "Content-Length: 4") + "abcd" + request("GET /claims/1", withA),
		status: []int{400}},
	{name: "Content-Length list", send: request("POST /upload", withB, "Content-Length: 4, 4") + "abcd", status: []int{400}},
	{name: "signed Content-Length", send: request("POST /upload", withB, "Content-Length: +4") + "abcd", status: []int{400}},
	{name: "negative Content-Length", send: request("POST /upload", withB, "Content-Length: -1") + "abcd", status: []int{400}},
	{name: "Transfer-Encoding xchunked", send: request("POST /upload", withB, "Transfer-Encoding: xchunked") + "0\r\n\r\n",
		status: []int{400}},
	{name: "Transfer-Encoding gzip, chunked", send: request("POST /upload", withB, "Transfer-Encoding: gzip, chunked") + "0\r\n\r\n",
		status: []int{400}},
	{name: "Transfer-Encoding twice", send: request("POST /upload", withB, "Transfer-Encoding: chunked",
		"Transfer-Encoding: chunked") + "0\r\n\r\n", status: []int{400}},
	{name: "Transfer-Encoding on HTTP/1.0", prime: primeA,
		send: "POST /upload HTTP/1.0\r\nHost: x\r\n" + withB + "\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" +
			request("GET /claims/1", withA), status: []int{400}},
	{name: "space before the colon", send: request("GET /claims/1", "X-API-Key : "+keyA), status: []int{400}},
	{name: "space before the colon of Transfer-Encoding", send: request("POST /upload", withB, "Transfer-Encoding : chunked") +
		"0\r\n\r\n", status: []int{400}},
	{name: "two Host fields", send: request("GET /claims/1", withB, "Host: y"), status: []int{400}},
	{name: "no Host on HTTP/1.1", send: "GET /claims/1 HTTP/1.1\r\n" + withB + "\r\n\r\n", status: []int{400}},
	{name: "HTTP/2.0 request line", send: strings.Replace(request("GET /claims/1", withB), "HTTP/1.1", "HTTP/2.0", 1),
		status: []int{505}},
	{name: "HTTP/1.2 request line", send: strings.Replace(request("GET /claims/1", withB), "HTTP/1.1", "HTTP/1.2", 1),
		status: []int{505}},
	{name: "HTTP/2 connection preface", send: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", status: []int{400}},
	{name: "bare CR in a field", send: request("GET /claims/1", withB, "X-Note: a\rb"), status: []int{400}},
	{name: "NUL in a field", send: request("GET /claims/1", withB, "X-Note: a\x00b"), status: []int{400}},
	{name: "bare LF line ends read as CRLF", send: strings.ReplaceAll(request("GET /claims/1", withB), "\r\n", "\n"),
		status: []int{200}, received: []string{"GET /claims/1 | " + fromB}, counted: []string{"claims partner-b allowed"}},
	{name: "pipelined behind a body", prime: primeA,
		send: request("POST /upload", withB, "Content-Length: 3") + "abc" + request("GET /claims/1", withA) +
			request("GET /claims/2", withB),
		status: []int{200, 429, 200}, received: []string{`POST /upload | Content-Length: 3 | ` + fromB + ` | body="abc"`,
			"GET /claims/2 | " + fromB},
		counted: []string{"claims partner-a limited", "claims partner-b allowed"}},
	{name: "chunk extension and trailer not sent on", send: request("POST /upload", withB, "Transfer-Encoding: chunked") +
		"1;x=y\r\nA\r\n0\r\nX-API-Key: " + keyA + "\r\n\r\n",
		status: []int{200}, received: []string{`POST /upload | ` + fromB + ` | body="A"`}},
}

func TestSmugglingAttacks(t *testing.T) { runAttacks(t, smuggling) }

// TestSlowHeadersClosed: a caller that does not finish its headers within
// server.read_header_timeout loses its connection, and nothing reaches
// the upstream.
func TestSlowHeadersClosed(t *testing.T) {
	h := startGateway(t, "server: { read_header_timeout: 200ms }\n"+attackConfig)
	c, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET /claims/1 HTTP/1.1\r\nHost: x\r\n"); err != nil { // and never the end
		t.Fatal(err)
	}
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("the connection did not close: %v", err)
	}
	if n := h.up.count(); n != 0 {
		t.Errorf("the upstream received %d requests", n)
	}
}
