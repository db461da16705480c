package gateway_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Probes against a raw upstream: one that records the bytes sluice wrote to
// it, so that a second request carried in the first one's body, or a field
// no HTTP library would show, is visible as it went on the wire.

// rawUpstream records every byte it receives and answers each request it
// reads (as net/http reads them) with 200 and its path.
type rawUpstream struct {
	ln  net.Listener
	wg  sync.WaitGroup
	mu  sync.Mutex
	raw bytes.Buffer
	// answer, if set, writes the whole answer to a request for /raw
	// (status line, fields and body, as given).
	answer string
}

func newRawUpstream(t *testing.T) *rawUpstream {
	t.Helper()
	u := &rawUpstream{ln: listen(t)}
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for {
			c, err := u.ln.Accept()
			if err != nil {
				return
			}
			u.wg.Add(1)
			go func() { defer u.wg.Done(); u.serve(c) }()
		}
	}()
	t.Cleanup(func() { _ = u.ln.Close(); u.wg.Wait() })
	return u
}

func (u *rawUpstream) url() string { return "http://" + u.ln.Addr().String() }

func (u *rawUpstream) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(recorder{c, u})
	for {
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		body := "upstream ok " + r.URL.Path
		if r.URL.Path == "/raw" && u.answer != "" {
			if _, err := io.WriteString(c, u.answer); err != nil {
				return
			}
			continue
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
			return
		}
	}
}

// received returns the request lines the upstream received, in order,
// without the sentinel's: every line of the wire that starts with a method
// and ends with a protocol, so that a request hidden in a body shows too.
func (u *rawUpstream) received() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var lines []string
	for line := range strings.Lines(u.raw.String()) {
		line = strings.TrimRight(line, "\r\n")
		if strings.Contains(line, " HTTP/1.") && !strings.Contains(line, "/sentinel") {
			lines = append(lines, line)
		}
	}
	return lines
}

// wire returns every byte the upstream received.
func (u *rawUpstream) wire() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.raw.String()
}

type recorder struct {
	net.Conn
	u *rawUpstream
}

func (r recorder) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.u.mu.Lock()
	r.u.raw.Write(p[:n])
	r.u.mu.Unlock()
	return n, err
}

// rawAttack is a probe whose upstream is a rawUpstream.
type rawAttack struct {
	name   string
	answer string // the upstream's answer to /raw (rawUpstream.answer)
	prime  []string
	send   string
	status []int
	// lines are the request lines the upstream received (received), and
	// wire strings its bytes must contain.
	lines, wire []string
	notWire     []string // strings its bytes must not contain
	// answered and notAnswered: strings the caller's bytes must, and must
	// not, contain.
	answered, notAnswered []string
	// aborted: the upstream may have seen the request's head and part of
	// its body before sluice read the broken rest (lines then are the
	// request lines it may have received, and nothing else).
	aborted bool
	counted []string
}

func (a rawAttack) run(t *testing.T) {
	up := newRawUpstream(t)
	up.answer = a.answer
	h := startGateway(t, strings.ReplaceAll(attackConfig, "{{UPSTREAM}}", up.url()))
	for _, p := range a.prime {
		h.exchange(p)
	}
	n, before := len(up.received()), decisions(h.metrics())
	got, answer := exchangeBytes(t, h, a.send)
	if !equal(got, a.status) {
		t.Errorf("statuses %v, want %v", got, a.status)
	}
	for _, w := range a.answered {
		if !strings.Contains(answer, w) {
			t.Errorf("the caller's answer lacks %q:\n%s", w, answer)
		}
	}
	for _, w := range a.notAnswered {
		if strings.Contains(answer, w) {
			t.Errorf("the caller's answer has %q:\n%s", w, answer)
		}
	}
	if got := up.received()[n:]; !equal(got, a.lines) && !(a.aborted && len(got) == 0) {
		t.Errorf("the upstream received request lines %q, want %q\nwire:\n%s", got, a.lines, up.wire())
	}
	for _, w := range a.wire {
		if !strings.Contains(up.wire(), w) {
			t.Errorf("the upstream's wire lacks %q:\n%s", w, up.wire())
		}
	}
	for _, w := range a.notWire {
		if strings.Contains(up.wire(), w) {
			t.Errorf("the upstream's wire has %q:\n%s", w, up.wire())
		}
	}
	if got := counted(before, decisions(h.metrics())); !equal(got, a.counted) {
		t.Errorf("counted %q, want %q", got, a.counted)
	}
}

// exchangeBytes is harness.exchange, which it calls on a connection whose
// bytes it records: the statuses before the sentinel's, and the bytes.
func exchangeBytes(t *testing.T, h *harness, raw string) ([]int, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _, _ = io.WriteString(c, raw+sentinel) }() // the server may answer before reading it all
	var got bytes.Buffer
	br := bufio.NewReader(io.TeeReader(c, &got))
	var statuses []int
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Errorf("no answer in 10s after %v", statuses)
			}
			return statuses, got.String()
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) == "upstream ok /sentinel" {
			return statuses, got.String()
		}
		statuses = append(statuses, resp.StatusCode)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var rawAttacks = []rawAttack{
	// fasthttp ignores Transfer-Encoding: identity and read what follows as
	// the next request; a front proxy that knows identity reads it as body.
	{name: "Transfer-Encoding: identity, a request in the body", prime: primeA,
		send:   request("POST /upload", withB, "Transfer-Encoding: identity") + request("GET /claims/1", withA),
		status: []int{400}},
	{name: "Transfer-Encoding: identity beside Content-Length", prime: primeA,
		send:   request("POST /upload", withB, "Transfer-Encoding: identity", "Content-Length: 1") + "A" + request("GET /claims/1", withA),
		status: []int{400}},
	// A space inside a field name: an upstream that reads names as CGI
	// does (spaces and dashes to underscores) would find a key in it.
	{name: "key header spelled with a space", prime: primeA, send: request("GET /claims/1", "X-API Key: "+keyA),
		status: []int{400}},
	{name: "field name with a tab", send: request("GET /claims/1", withB, "X-Note\tx: a"), status: []int{400}},
	{name: "obs-fold line is no field name", send: "GET /claims/1 HTTP/1.1\r\nHost: x\r\n" + withB + "\r\nX-Note: a\r\n b c: d\r\n\r\n",
		status: []int{200}, lines: []string{"GET /claims/1 HTTP/1.1"}, wire: []string{"\r\nX-Note: a b c: d\r\n"},
		counted: []string{"claims partner-b allowed"}},
	// The forwarding headers are sluice's, in every spelling: a CGI-style
	// upstream reads X_Forwarded_For as X-Forwarded-For.
	{name: "forwarding headers respelled", send: request("GET /claims/1", withB, "X_Forwarded_For: 203.0.113.7",
		"x-forwarded_for: 203.0.113.8", "X_FORWARDED_HOST: evil", "X_Forwarded_Proto: https", "Sluice_Loop_Mark: x"),
		status: []int{200}, lines: []string{"GET /claims/1 HTTP/1.1"}, wire: []string{"\r\nX-Forwarded-For: 127.0.0.1\r\n"},
		notWire: []string{"203.0.113", "evil", "https", "Sluice_", "_for", "_For", "_FOR"}, counted: []string{"claims partner-b allowed"}},
	// HTTP/1.0 needs no Host: the upstream's own goes on.
	{name: "HTTP/1.0 without Host", send: "GET /claims/1 HTTP/1.0\r\n" + withB + "\r\n\r\n", status: []int{200},
		lines: []string{"GET /claims/1 HTTP/1.1"}, counted: []string{"claims partner-b allowed"}},
	{name: "HTTP/1.0 keep-alive without Host, pipelined behind a 429", prime: primeA,
		send: "GET /claims/1 HTTP/1.0\r\nConnection: keep-alive\r\n" + withA + "\r\n\r\n" +
			"GET /claims/2 HTTP/1.0\r\nConnection: keep-alive\r\n" + withB + "\r\n\r\n",
		status: []int{429, 200}, lines: []string{"GET /claims/2 HTTP/1.1"},
		counted: []string{"claims partner-a limited", "claims partner-b allowed"}},
	// The body is re-framed: the caller's chunk sizes, extensions and
	// trailers never reach the upstream, and a leading zero changes nothing.
	{name: "chunk size with leading zeros, extension and trailer", prime: primeA,
		send: request("POST /upload", withB, "Transfer-Encoding: chunked") + "0001;ext=\"" + request("GET /claims/1", withA) +
			"\"\r\nA\r\n0\r\nX-Smuggled: 1\r\n\r\n",
		status: []int{400}, aborted: true, lines: []string{"POST /upload HTTP/1.1"}},
	{name: "chunk size 0x1", send: request("POST /upload", withB, "Transfer-Encoding: chunked") + "0x1\r\nA\r\n0\r\n\r\n",
		status: []int{400}},
	{name: "chunk lines ended by a bare LF", send: request("POST /upload", withB, "Transfer-Encoding: chunked") + "1\nA\n0\n\n",
		status: []int{400}},
	{name: "chunked body re-framed", send: request("POST /upload", withB, "Transfer-Encoding: chunked") + "0003;x=y\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n",
		status: []int{200}, lines: []string{"POST /upload HTTP/1.1"}, wire: []string{"\r\n\r\n3\r\nabc\r\n0\r\n\r\n"}},
	// An answer before the body (Expect: 100-continue) closes the
	// connection: the body is never read as a request.
	{name: "Expect: 100-continue from a limited caller", prime: []string{request("POST /claims/1", withA, "Content-Length: 0")},
		send:   request("POST /claims/1", withA, "Content-Length: 47", "Expect: 100-continue") + request("GET /claims/2", withB),
		status: []int{100, 429}, counted: []string{"writes partner-a limited"}},
	// Pipelined: the first is refused, the second goes on whole, counted.
	{name: "pipelined: a 429, then a POST with a body", prime: primeA,
		send:   request("GET /claims/1", withA) + request("POST /claims/2", withB, "Content-Length: 3") + "abc",
		status: []int{429, 200}, lines: []string{"POST /claims/2 HTTP/1.1"}, wire: []string{"\r\n\r\nabc"},
		counted: []string{"claims partner-a limited", "writes partner-b allowed"}},
	// Absolute-form: matched and sent on by its path; the Host field goes
	// on. An authority naming another host than Host is refused: the
	// upstream reads Host, an origin server the authority (RFC 9112 3.2.2).
	{name: "absolute-form with the Host's authority", send: "GET http://X:80/claims/1?q HTTP/1.1\r\nHost: x\r\n" + withB + "\r\n\r\n",
		status: []int{200}, lines: []string{"GET /claims/1?q HTTP/1.1"}, wire: []string{"\r\nHost: x\r\n"},
		counted: []string{"claims partner-b allowed"}},
	{name: "absolute-form with another authority", send: "GET http://other/claims/1?q HTTP/1.1\r\nHost: x\r\n" + withB + "\r\n\r\n",
		status: []int{400}},
}

// What an upstream answers goes to the caller in one framing: an answer
// that would switch the caller's connection to another protocol never does.
var rawAnswers = []rawAttack{
	{name: "upstream 101 to a request without Upgrade", answer: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n" +
		"Connection: Upgrade\r\n\r\nGET /claims/1 HTTP/1.1\r\n", send: request("GET /raw", withB) + request("GET /other", withB),
		status: []int{502, 200}, lines: []string{"GET /raw HTTP/1.1", "GET /other HTTP/1.1"}},
	{name: "upstream field name with a space", answer: "HTTP/1.1 200 OK\r\nX A: 1\r\nX-B: 2\r\nContent-Length: 2\r\n\r\nok",
		send: request("GET /raw", withB), status: []int{200}, lines: []string{"GET /raw HTTP/1.1"},
		answered: []string{"X-B: 2"}, notAnswered: []string{"X A"}},
	// Issue 15 item 7: an answer without Content-Type reaches the caller
	// without one (fasthttp would add text/plain; charset=utf-8).
	{name: "upstream answer without Content-Type", answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		send: request("GET /raw", withB), status: []int{200}, lines: []string{"GET /raw HTTP/1.1"},
		answered: []string{"\r\nContent-Length: 2\r\n"}, notAnswered: []string{"Content-Type", "text/plain"}},
	{name: "upstream 204 without Content-Type", answer: "HTTP/1.1 204 No Content\r\n\r\n",
		send: request("GET /raw", withB), status: []int{204}, lines: []string{"GET /raw HTTP/1.1"},
		notAnswered: []string{"Content-Type", "text/plain"}},
}

func TestRawUpstreamAnswers(t *testing.T) {
	for _, a := range rawAnswers {
		t.Run(a.name, func(t *testing.T) { a.run(t) })
	}
}

func TestRawUpstreamAttacks(t *testing.T) {
	for _, a := range rawAttacks {
		t.Run(a.name, func(t *testing.T) { a.run(t) })
	}
}
