package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The attack suite: an attacker's probes written by hand on a real socket,
// where a client library would have normalised them, against a gateway in
// front of a recording upstream. Each row says what the caller got, what
// the upstream received and what was counted. To add a probe, add a row to
// attacks (or a table of your own run with runAttacks); helpers:
// request() writes a request, primeA uses up partner-a's claims limit.

// attackConfig: partner-a and partner-b by key, unknown callers counted by
// IP; claims allows 1 GET a minute per caller, writes 1 write a minute,
// per-ip 1 request a minute per address on /ip.
const attackConfig = `listen: 127.0.0.1:18080
upstream: {{UPSTREAM}}
admin: 127.0.0.1:18090
clients:
  unknown: anonymous
  list:
    - id: partner-a
      keys: [` + keyA + `]
    - id: partner-b
      keys: [` + keyB + `]
rules:
  - name: claims
    match: { path: /claims, methods: [GET] }
    algorithm: fixed_window
    rate: 1/m
  - name: writes
    match: { path: /claims, methods: [POST, PUT, PATCH, DELETE] }
    algorithm: fixed_window
    rate: 1/m
  - name: per-ip
    match: { path: /ip }
    key: ip
    algorithm: fixed_window
    rate: 1/m
`

// caseInsensitiveConfig is attackConfig for an upstream that routes paths
// regardless of case.
const caseInsensitiveConfig = "case_insensitive_paths: true\n" + attackConfig

// attack is one probe.
type attack struct {
	name   string
	config string   // default attackConfig
	prime  []string // requests sent first, each on its own connection
	send   string   // the probe: raw bytes, one request or several
	status []int    // the status of each response to send, in order
	// received is what the upstream received from the probe, one line per
	// request (see receivedLines for the format); nil: nothing.
	received []string
	// counted is every rule decision the probe made, as "rule client
	// decision" (the labels of sluice_requests_total), with " xN" when
	// made N times; nil: none.
	counted []string
}

// request writes one HTTP/1.1 request: line is "METHOD target", fields are
// "Name: value" lines written as given; Host: x comes first.
func request(line string, fields ...string) string {
	var b strings.Builder
	b.WriteString(line + " HTTP/1.1\r\nHost: x\r\n")
	for _, f := range fields {
		b.WriteString(f + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

var (
	withA  = "X-API-Key: " + keyA
	withB  = "X-API-Key: " + keyB
	primeA = []string{request("GET /claims/1", withA)} // partner-a's claims used up
	// What the upstream receives besides the request line, for each
	// partner: its key and its name.
	fromA = "X-Api-Key: " + keyA + " | X-Sluice-Client: partner-a"
	fromB = "X-Api-Key: " + keyB + " | X-Sluice-Client: partner-b"
)

var attacks = []attack{
	// Method spellings: counted as the method they spell, sent on upper-case.
	{name: "lower-case method", prime: primeA, send: request("get /claims/1", withA), status: []int{429},
		counted: []string{"claims partner-a limited"}},
	{name: "mixed-case method Get", prime: primeA, send: request("Get /claims/1", withA), status: []int{429},
		counted: []string{"claims partner-a limited"}},
	{name: "mixed-case method gEt", prime: primeA, send: request("gEt /claims/1", withA), status: []int{429},
		counted: []string{"claims partner-a limited"}},
	{name: "lower-case method sent on upper-case", send: request("get /claims/1", withB), status: []int{200},
		received: []string{"GET /claims/1 | " + fromB}, counted: []string{"claims partner-b allowed"}},
	{name: "lower-case write method", send: request("patch /claims/1", withB), status: []int{200},
		received: []string{"PATCH /claims/1 | Content-Length: 0 | " + fromB}, counted: []string{"writes partner-b allowed"}},
	{name: "method override headers removed", prime: primeA,
		send: request("POST /claims/1", withA, "X-HTTP-Method-Override: GET", "X_HTTP_METHOD: GET",
			"x-method-override: GET", "X-Http-Method: GET", "Content-Length: 0"),
		status: []int{200}, received: []string{"POST /claims/1 | Content-Length: 0 | " + fromA},
		counted: []string{"writes partner-a allowed"}},

	{name: "path override headers removed", prime: primeA,
		send:   request("GET /other", withA, "X-Original-URL: /claims/1", "X_REWRITE_URL: /claims/1"),
		status: []int{200}, received: []string{"GET /other | " + fromA}},

	// Path spellings: counted as the path they spell, sent on clean, or 400.
	{name: "path parameter", prime: primeA, send: request("GET /claims;x", withA), status: []int{429},
		counted: []string{"claims partner-a limited"}},
	{name: "jsessionid", prime: primeA, send: request("GET /claims;jsessionid=1", withA), status: []int{429},
		counted: []string{"claims partner-a limited"}},
	{name: "parameter on a dot-dot segment", prime: primeA, send: request("GET /x/..;/claims", withA), status: []int{429},
		counted: []string{"claims partner-a limited"}},
	{name: "encoded letter", prime: primeA, send: request("GET /%63laims/1", withA), status: []int{429},
		counted: []string{"claims partner-a limited"}},
	{name: "encoded dot-dot", prime: primeA, send: request("GET /x/%2e%2e/claims", withA), status: []int{429},
		counted: []string{"claims partner-a limited"}},
	{name: "double slash and dot", prime: primeA, send: request("GET //claims/./1", withA), status: []int{429},
		counted: []string{"claims partner-a limited"}},
	{name: "dot-dot back into claims", prime: primeA, send: request("GET /claims/1/..", withA), status: []int{429},
		counted: []string{"claims partner-a limited"}},
	{name: "parameters dropped on the way", send: request("GET /claims;jsessionid=1/7;v=2", withB), status: []int{200},
		received: []string{"GET /claims/7 | " + fromB}, counted: []string{"claims partner-b allowed"}},
	{name: "dot-dot out of claims sent resolved", send: request("GET /claims/..", withA), status: []int{200},
		received: []string{"GET / | " + fromA}},
	{name: "encoded letters sent decoded", send: request("GET /%63laims/caf%c3%a9", withB), status: []int{200},
		received: []string{"GET /claims/caf%C3%A9 | " + fromB}, counted: []string{"claims partner-b allowed"}},
	{name: "encoded semicolon", prime: primeA, send: request("GET /claims%3bx", withA), status: []int{400}},
	{name: "encoded slash", prime: primeA, send: request("GET /x%2f..%2fclaims", withA), status: []int{400}},
	{name: "backslashes", prime: primeA, send: request(`GET /x\..\claims`, withA), status: []int{400}},
	{name: "encoded backslash", prime: primeA, send: request("GET /x%5c..%5cclaims", withA), status: []int{400}},
	{name: "double-encoded letter", prime: primeA, send: request("GET /%2563laims", withA), status: []int{400}},
	{name: "encoded question mark", prime: primeA, send: request("GET /claims%3f/1", withA), status: []int{400}},
	{name: "absolute-form target", prime: primeA, send: request("GET http://x/claims;x/1", withA), status: []int{429},
		counted: []string{"claims partner-a limited"}},
	{name: "fragment", prime: primeA, send: request("GET /claims#x", withA), status: []int{400}},
	{name: "asterisk-form: answered by the server, never sent on", send: request("OPTIONS *", withB), status: []int{200}},
	{name: "upper case: another path by default", prime: primeA, send: request("GET /CLAIMS", withA), status: []int{200},
		received: []string{"GET /CLAIMS | " + fromA}},
	{name: "upper case with case_insensitive_paths", config: caseInsensitiveConfig, prime: primeA,
		send: request("GET /CLAIMS/1", withA), status: []int{429}, counted: []string{"claims partner-a limited"}},
	{name: "long s with case_insensitive_paths", config: caseInsensitiveConfig, prime: primeA,
		send: request("GET /claim%C5%BF/1", withA), status: []int{429}, counted: []string{"claims partner-a limited"}},

	// The key header: once, in its own spelling.
	{name: "key twice", prime: primeA, send: request("GET /claims/1", withA, withA), status: []int{400}},
	{name: "two keys", send: request("GET /claims/1", withA, withB), status: []int{400}},
	{name: "key list", send: request("GET /claims/1", withA+", "+keyB), status: []int{400}},
	{name: "respelled key: anonymous, not sent on", send: request("GET /claims/1", "X_API_KEY: "+keyA), status: []int{200},
		received: []string{"GET /claims/1 | X-Sluice-Client: anonymous"}, counted: []string{"claims anonymous allowed"}},
	{name: "key beside a respelled one", prime: primeA, send: request("GET /claims/1", withA, "X_API_KEY: "+keyB), status: []int{429},
		counted: []string{"claims partner-a limited"}},

	// Connection cannot make sluice's headers vanish.
	{name: "Connection names X-Sluice-Client", send: request("GET /claims/1", withB, "Connection: X-Sluice-Client"),
		status: []int{200}, received: []string{"GET /claims/1 | " + fromB}, counted: []string{"claims partner-b allowed"}},
	{name: "Connection names the key header", send: request("GET /claims/1", withB, "Connection: keep-alive, x-api-key, X-SLUICE-CLIENT"),
		status: []int{200}, received: []string{"GET /claims/1 | " + fromB}, counted: []string{"claims partner-b allowed"}},
	// Issue 15 item 11: a Connection list of thousands of names cost every
	// step that read it; past 32 names the request is refused, uncounted.
	{name: "Connection naming 32 fields, the key among them", send: request("GET /claims/1", withB, "X-Note: a",
		"Connection: "+connectionNames(30)+", X-Note, X-API-Key"),
		status: []int{200}, received: []string{"GET /claims/1 | " + fromB}, counted: []string{"claims partner-b allowed"}},
	{name: "Connection naming 33 fields", prime: primeA, send: request("GET /claims/1", withA, "Connection: "+connectionNames(33)),
		status: []int{400}},
	{name: "Connection naming 5,000 fields", send: request("GET /claims/1", withB, "Connection: "+connectionNames(5000)),
		status: []int{400}},

	// An upgrade to cleartext HTTP/2 would carry the connection's later
	// requests past the limiter as HTTP/2 streams: it never goes on.
	{name: "Upgrade: h2c not sent on", send: request("GET /claims/1", withB, "Connection: Upgrade, HTTP2-Settings",
		"Upgrade: h2c", "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA"),
		status: []int{200}, received: []string{"GET /claims/1 | " + fromB}, counted: []string{"claims partner-b allowed"}},
	{name: "Upgrade: h2c among others not sent on", send: request("GET /claims/1", withB, "Connection: upgrade",
		"Upgrade: websocket, H2C"),
		status: []int{200}, received: []string{"GET /claims/1 | " + fromB}, counted: []string{"claims partner-b allowed"}},

	// Held before: keep them held.
	{name: "X-Sluice-Client from the caller, every spelling",
		send:   request("GET /claims/1", withB, "X-Sluice-Client: partner-a", "x_sluice_client: admin", "X-SLUICE_CLIENT: root"),
		status: []int{200}, received: []string{"GET /claims/1 | " + fromB}, counted: []string{"claims partner-b allowed"}},
	{name: "X-Sluice-Client from an anonymous caller", send: request("GET /other", "X-Sluice-Client: partner-a"),
		status: []int{200}, received: []string{"GET /other | X-Sluice-Client: anonymous"}},
	{name: "X-Forwarded-For from an untrusted peer", prime: []string{request("GET /ip")},
		send: request("GET /ip", "X-Forwarded-For: 203.0.113.7"), status: []int{429}, counted: []string{"per-ip anonymous limited"}},
	{name: "X-Forwarded-For from an untrusted peer not sent on", send: request("GET /ip", "X-Forwarded-For: 203.0.113.7"),
		status: []int{200}, received: []string{"GET /ip | X-Sluice-Client: anonymous"}, counted: []string{"per-ip anonymous allowed"}},
	{name: "Forwarded from an untrusted peer", prime: []string{request("GET /ip")},
		send: request("GET /ip", "Forwarded: for=203.0.113.7"), status: []int{429}, counted: []string{"per-ip anonymous limited"}},
	{name: "Forwarded from an untrusted peer not sent on", send: request("GET /ip", "Forwarded: for=203.0.113.7"),
		status: []int{200}, received: []string{"GET /ip | X-Sluice-Client: anonymous"}, counted: []string{"per-ip anonymous allowed"}},
	{name: "pipelined requests each counted", send: request("GET /claims/1", withA) + request("GET /claims/2", withA),
		status: []int{200, 429}, received: []string{"GET /claims/1 | " + fromA},
		counted: []string{"claims partner-a allowed", "claims partner-a limited"}},
	// Content-Length beside Transfer-Encoding is refused (RFC 9112 6.1 lets
	// a server refuse it) and the connection closed: nothing in the body is
	// read as a request, nothing reaches the upstream.
	{name: "CL+TE: a request smuggled in a body", prime: primeA,
		send: request("POST /upload", withB, "Content-Length: 4", "Transfer-Encoding: chunked") + "0\r\n\r\n" +
			request("GET /claims/1", withA),
		status: []int{400}},
	{name: "TE+CL: a request smuggled in a chunk", prime: primeA,
		send: request("POST /upload", withB, "Transfer-Encoding: chunked", "Content-Length: 3") +
			"1\r\nA\r\n0\r\n\r\n" + request("GET /claims/1", withA),
		status: []int{400}},
	{name: "conflicting Content-Length", send: request("POST /upload", withB, "Content-Length: 4", "Content-Length: 5") + "abcde",
		status: []int{400}},
	// An obs-fold continues the line before it (RFC 9112 5.2): the key is
	// read, counted and sent on as one ordinary field.
	{name: "obs-fold", prime: primeA, send: "GET /claims/1 HTTP/1.1\r\nHost: x\r\nX-API-Key:\r\n " + keyA + "\r\n\r\n",
		status: []int{429}, counted: []string{"claims partner-a limited"}},
	{name: "obs-fold sent on unfolded", send: "GET /claims/1 HTTP/1.1\r\nHost: x\r\nX-API-Key:\r\n " + keyB + "\r\n\r\n",
		status: []int{200}, received: []string{"GET /claims/1 | " + fromB}, counted: []string{"claims partner-b allowed"}},
	// Issue 15 item 8: a header block whose end is a bare LF is refused,
	// whatever follows it (alone, TestBareLFHeaderEnd); other line ends of
	// a bare LF are read as CRLF.
	{name: "header block ended by a bare LF", prime: primeA, send: "GET /claims/1 HTTP/1.1\nHost: x\n" + withA + "\n\n",
		status: []int{400}},
	{name: "last field's line ended by a bare LF", send: "GET /claims/1 HTTP/1.1\r\nHost: x\r\n" + withB + "\n\r\n",
		status: []int{400}},
	{name: "bare LF line ends, CRLF CRLF end", send: "GET /claims/1 HTTP/1.1\nHost: x\n" + withB + "\r\n\r\n",
		status: []int{200}, received: []string{"GET /claims/1 | " + fromB}, counted: []string{"claims partner-b allowed"}},
	{name: "obs-fold hiding a key in another field", prime: primeA,
		send:   "GET /claims/1 HTTP/1.1\r\nHost: x\r\nX-Note: a\r\n X-API-Key: " + keyB + "\r\n" + withA + "\r\n\r\n",
		status: []int{429}, counted: []string{"claims partner-a limited"}},
}

// protectAttackConfig is attackConfig with a protect block: bodies of up
// to server.body_buffer are read before their request takes a slot.
const protectAttackConfig = attackConfig + "protect:\n  max_in_flight: 4\n"

// uploadAttacks (issue 15, items 5 and 6; the slow uploads of items 4 and
// 5 are upload_test.go's, which need connections at once).
var uploadAttacks = []attack{
	{name: "15.5: a broken chunked body under protect never reaches the upstream", config: protectAttackConfig,
		send: request("POST /other", withB, "Transfer-Encoding: chunked") + "1\r\na\r\nzz\r\n", status: []int{400}},
	{name: "15.5: a body under protect goes on whole, and the connection is kept", config: protectAttackConfig,
		send:   request("POST /other", withB, "Transfer-Encoding: chunked") + "1\r\na\r\n2\r\nbc\r\n0\r\n\r\n" + request("GET /other", withB),
		status: []int{200, 200}, received: []string{"POST /other | " + fromB + ` | body="abc"`, "GET /other | " + fromB}},
}

func TestAttacks(t *testing.T) { runAttacks(t, attacks) }

// connectionNames lists n field names: "x-1, x-2, ...".
func connectionNames(n int) string {
	names := make([]string, n)
	for i := range names {
		names[i] = "x-" + strconv.Itoa(i+1)
	}
	return strings.Join(names, ", ")
}

func TestUploadAttacks(t *testing.T) { runAttacks(t, uploadAttacks) }

// chunksOf frames body as chunks of one byte each.
func chunksOf(body string) string {
	var b strings.Builder
	for i := range len(body) {
		b.WriteString("1\r\n" + body[i:i+1] + "\r\n")
	}
	return b.String() + "0\r\n\r\n"
}

// rawUploadAttacks: item 6 of issue 15, on the upstream's wire.
var rawUploadAttacks = []rawAttack{
	{name: "15.6: 1-byte chunks go on as one chunk", send: request("POST /other", withB, "Transfer-Encoding: chunked") +
		chunksOf(strings.Repeat("a", 30)), status: []int{200}, lines: []string{"POST /other HTTP/1.1"},
		wire: []string{"\r\n1e\r\n" + strings.Repeat("a", 30) + "\r\n0\r\n"}, notWire: []string{"\r\n1\r\na\r\n"}},
}

func TestRawUploadAttacks(t *testing.T) {
	for _, a := range rawUploadAttacks {
		t.Run(a.name, func(t *testing.T) { a.run(t) })
	}
}

// runAttacks runs each row against a gateway of its own.
func runAttacks(t *testing.T, rows []attack) {
	for _, a := range rows {
		t.Run(a.name, func(t *testing.T) { a.run(t) })
	}
}

func (a attack) run(t *testing.T) {
	h := startGateway(t, cmpOr(a.config, attackConfig))
	for _, p := range a.prime {
		if got := h.exchange(p); !slices.Equal(got, []int{200}) {
			t.Fatalf("prime %q: statuses %v, want [200]", p, got)
		}
	}
	before, seenBefore := decisions(h.metrics()), h.up.count()
	status := h.exchange(a.send)
	if !slices.Equal(status, a.status) {
		t.Errorf("statuses %v, want %v", status, a.status)
	}
	if got := receivedLines(h.up.since(seenBefore)); !slices.Equal(got, a.received) {
		t.Errorf("the upstream received:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(a.received, "\n\t"))
	}
	if got := counted(before, decisions(h.metrics())); !slices.Equal(got, a.counted) {
		t.Errorf("counted %q, want %q", got, a.counted)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// sentinel ends every probe: the gateway answers it and closes, so that
// every response to the probe has been read when the connection ends,
// however many requests the gateway found in it.
var sentinel = request("GET /sentinel", "Connection: close")

// exchange writes raw and then the sentinel on one connection and returns
// the status of every response before the sentinel's.
func (h *harness) exchange(raw string) []int {
	h.t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _, _ = io.WriteString(c, raw+sentinel) }() // the server may answer before reading it all
	br := bufio.NewReader(c)
	var statuses []int
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				h.t.Errorf("no answer in 10s after %v", statuses)
			}
			return statuses
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) == "upstream ok /sentinel" {
			return statuses
		}
		statuses = append(statuses, resp.StatusCode)
	}
}

// count returns how many requests the upstream has received.
func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.last)
}

// since returns the requests the upstream received after the first n,
// without the sentinel.
func (u *upstream) since(n int) []seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []seen
	for _, s := range u.last[n:] {
		if s.Path != "/sentinel" {
			out = append(out, s)
		}
	}
	return out
}

// receivedLines renders requests as "METHOD target | Name: value | ...",
// header fields sorted by name, then " | body=..." if there is one. Left
// out: what the proxy adds to every request (Accept-Encoding,
// X-Forwarded-Host, X-Forwarded-Proto, Sluice-Loop-Mark),
// X-Forwarded-For when it names only the peer, 127.0.0.1, and an
// X-Request-Id sluice made (TestRequestID checks those).
func receivedLines(reqs []seen) []string {
	var lines []string
	for _, s := range reqs {
		parts := []string{s.Method + " " + s.RequestURI}
		for _, name := range slices.Sorted(mapKeys(s.Header)) {
			v := s.Header[name]
			switch {
			case name == "Accept-Encoding" || name == "X-Forwarded-Host" || name == "X-Forwarded-Proto" || name == "Sluice-Loop-Mark":
				continue
			case name == "X-Forwarded-For" && slices.Equal(v, []string{"127.0.0.1"}):
				continue
			case name == "X-Request-Id" && len(v) == 1 && madeID.MatchString(v[0]):
				continue
			}
			for _, one := range v {
				parts = append(parts, name+": "+one)
			}
		}
		if s.Body != "" {
			parts = append(parts, "body="+strconv.Quote(s.Body))
		}
		lines = append(lines, strings.Join(parts, " | "))
	}
	return lines
}

func mapKeys(h http.Header) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range h {
			if !yield(k) {
				return
			}
		}
	}
}

var labelRE = regexp.MustCompile(`(\w+)="([^"]*)"`)

// decisions reads sluice_requests_total: "rule client decision" -> value.
func decisions(metrics string) map[string]float64 {
	out := map[string]float64{}
	for line := range strings.Lines(metrics) {
		series, value, ok := cutLast(strings.TrimSpace(line))
		if !ok || seriesName(series) != "sluice_requests_total" {
			continue
		}
		labels := map[string]string{}
		for _, m := range labelRE.FindAllStringSubmatch(series, -1) {
			labels[m[1]] = m[2]
		}
		v, _ := strconv.ParseFloat(value, 64)
		out[labels["rule"]+" "+labels["client"]+" "+labels["decision"]] = v
	}
	return out
}

// counted is what changed between two readings of decisions, sorted.
func counted(before, after map[string]float64) []string {
	var out []string
	for k, v := range after {
		switch d := v - before[k]; {
		case d == 1:
			out = append(out, k)
		case d != 0:
			out = append(out, fmt.Sprintf("%s x%v", k, d))
		}
	}
	slices.Sort(out)
	return out
}

// countedHeaderConfig counts requests to /t by the X-Tenant header, one a minute
// per tenant; requests without it are refused.
const countedHeaderConfig = `listen: 127.0.0.1:18080
upstream: {{UPSTREAM}}
admin: 127.0.0.1:18090
rules:
  - name: tenants
    match: { path: /t }
    key: header:X-Tenant
    missing_header: reject
    algorithm: fixed_window
    rate: 1/m
`

// A header a rule counts by is read one way only, as the key header is:
// sent twice it is refused, and a respelling never reaches the upstream.
var tenantAttacks = []attack{
	{name: "counted header twice", config: countedHeaderConfig, prime: []string{request("GET /t", "X-Tenant: acme")},
		send: request("GET /t", "X-Tenant: fresh", "X-Tenant: acme"), status: []int{400}},
	{name: "counted header twice, same value", config: countedHeaderConfig, send: request("GET /t", "X-Tenant: acme", "x-tenant: acme"),
		status: []int{400}},
	{name: "respelled counted header not sent on", config: countedHeaderConfig,
		send:   request("GET /t", "X-Tenant: fresh", "X_TENANT: acme"),
		status: []int{200}, received: []string{"GET /t | X-Tenant: fresh"}, counted: []string{"tenants - allowed"}},
	{name: "respelled counted header alone is missing", config: countedHeaderConfig, send: request("GET /t", "X_Tenant: acme"),
		status: []int{400}},
	// Counted as one value, it must not reach the upstream as none: the
	// caller cannot make it vanish by naming it in Connection.
	{name: "Connection names the counted header", config: countedHeaderConfig,
		send:   request("GET /t", "X-Tenant: fresh", "Connection: x-tenant"),
		status: []int{200}, received: []string{"GET /t | X-Tenant: fresh"}, counted: []string{"tenants - allowed"}},
}

func TestCountedHeaderAttacks(t *testing.T) { runAttacks(t, tenantAttacks) }
