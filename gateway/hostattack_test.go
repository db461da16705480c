package gateway_test

import (
	"strings"
	"testing"
)

// hostAttackConfig limits by host and by header, one request a minute per
// address: /claims on limited.example, every name below wild.example,
// bücher.example written in Unicode, /env with X-Env: prod, /debug with
// X-Debug sent at all.
const hostAttackConfig = `listen: 127.0.0.1:18080
upstream: {{UPSTREAM}}
admin: 127.0.0.1:18090
rules:
  - name: limited
    match: { host: limited.example, path: /claims }
    key: ip
    algorithm: fixed_window
    rate: 1/m
  - name: wild
    match: { host: "*.wild.example", path: /w }
    key: ip
    algorithm: fixed_window
    rate: 1/m
  - name: idn
    match: { host: bücher.example, path: /b }
    key: ip
    algorithm: fixed_window
    rate: 1/m
  - name: prod
    match: { path: /env, headers: { X-Env: prod } }
    key: ip
    algorithm: fixed_window
    rate: 1/m
  - name: debug
    match: { path: /debug, headers: { X-Debug: { present: true } } }
    key: ip
    algorithm: fixed_window
    rate: 1/m
`

// hosted writes one HTTP/1.1 request as request does, with host as its
// Host field ("" for none).
func hosted(line, host string, fields ...string) string {
	var b strings.Builder
	b.WriteString(line + " HTTP/1.1\r\n")
	if host != "" {
		b.WriteString("Host: " + host + "\r\n")
	}
	for _, f := range fields {
		b.WriteString(f + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

var (
	primeLimited = []string{hosted("GET /claims", "limited.example")}
	primeProd    = []string{request("GET /env", "X-Env: prod")}
	primeIDN     = []string{hosted("GET /b", "xn--bcher-kva.example")}
)

// hostAttacks: no spelling of a host or of a matched header escapes the
// rule that limits it; what has two readings is refused, uncounted.
var hostAttacks = []attack{
	{name: "host in upper case", prime: primeLimited, send: hosted("GET /claims", "LIMITED.EXAMPLE"), status: []int{429},
		counted: []string{"limited - limited"}},
	{name: "host with a trailing dot", prime: primeLimited, send: hosted("GET /claims", "limited.example."), status: []int{429},
		counted: []string{"limited - limited"}},
	{name: "host with a port", prime: primeLimited, send: hosted("GET /claims", "limited.example:18080"), status: []int{429},
		counted: []string{"limited - limited"}},
	{name: "host with case, dot and port", prime: primeLimited, send: hosted("GET /claims", "LiMiTeD.Example.:80"), status: []int{429},
		counted: []string{"limited - limited"}},
	{name: "host with two trailing dots", prime: primeLimited, send: hosted("GET /claims", "limited.example.."), status: []int{400}},
	{name: "another host is not limited", prime: primeLimited, send: hosted("GET /claims", "other.example"), status: []int{200},
		received: []string{"GET /claims"}},
	// RFC 9112 3.2.2: an origin server reads an absolute-form target's
	// authority and ignores Host; an upstream behind a proxy may read Host.
	{name: "absolute-form authority other than Host", prime: primeLimited,
		send: hosted("GET http://other.example/claims", "limited.example"), status: []int{400}},
	{name: "Host other than the absolute-form authority", prime: primeLimited,
		send: hosted("GET http://limited.example/claims", "other.example"), status: []int{400}},
	{name: "absolute-form authority spelled otherwise than Host", prime: primeLimited,
		send: hosted("GET http://LIMITED.example.:80/claims", "limited.example"), status: []int{429}, counted: []string{"limited - limited"}},
	{name: "absolute-form without Host", prime: primeLimited, send: hosted("GET http://limited.example/claims", ""),
		status: []int{400}}, // RFC 9112 3.2: an HTTP/1.1 request without Host is refused
	{name: "absolute-form with a user", prime: primeLimited,
		send: hosted("GET http://u@limited.example/claims", "limited.example"), status: []int{400}},
	{name: "two Host fields", prime: primeLimited,
		send: hosted("GET /claims", "other.example", "Host: limited.example"), status: []int{400}},
	{name: "two Host fields, one in lower case", prime: primeLimited,
		send: hosted("GET /claims", "limited.example", "host: other.example"), status: []int{400}},
	{name: "HTTP/1.0 without Host", prime: primeLimited, send: "GET /claims HTTP/1.0\r\n\r\n", status: []int{400}},
	{name: "host with a space", prime: primeLimited, send: hosted("GET /claims", "limited .example"), status: []int{400}},
	{name: "wildcard host in another spelling", prime: []string{hosted("GET /w", "a.wild.example")},
		send: hosted("GET /w", "A.WILD.EXAMPLE.:80"), status: []int{429}, counted: []string{"wild - limited"}},
	{name: "wildcard host two labels below", prime: []string{hosted("GET /w", "a.wild.example")},
		send: hosted("GET /w", "x.y.wild.example"), status: []int{429}, counted: []string{"wild - limited"}},
	{name: "wildcard never matches the name itself", prime: []string{hosted("GET /w", "a.wild.example")},
		send: hosted("GET /w", "wild.example"), status: []int{200}, received: []string{"GET /w"}},
	{name: "IDN host in Unicode", prime: primeIDN, send: hosted("GET /b", "bücher.example"), status: []int{429},
		counted: []string{"idn - limited"}},
	{name: "IDN host in Unicode upper case", prime: primeIDN, send: hosted("GET /b", "BÜCHER.example"), status: []int{429},
		counted: []string{"idn - limited"}},
	{name: "IDN host as punycode in upper case", prime: primeIDN, send: hosted("GET /b", "XN--BCHER-KVA.EXAMPLE."), status: []int{429},
		counted: []string{"idn - limited"}},
	// Counted on the rule; Go's net/http upstream refuses a Host that is
	// not ASCII (400), another may serve it.
	{name: "IDN host in Unicode counted", send: hosted("GET /b", "bücher.example"), status: []int{400},
		counted: []string{"idn - allowed"}},
	{name: "IDN host in full-width letters", prime: primeIDN, send: hosted("GET /b", "ｂüｃｈｅｒ.example"), status: []int{429},
		counted: []string{"idn - limited"}},

	// Matched headers: any case of the name, any of its values.
	{name: "matched header name in lower case", prime: primeProd, send: request("GET /env", "x-env: prod"), status: []int{429},
		counted: []string{"prod - limited"}},
	{name: "matched header name in upper case", prime: primeProd, send: request("GET /env", "X-ENV: prod"), status: []int{429},
		counted: []string{"prod - limited"}},
	{name: "matched header sent twice, the value second", prime: primeProd,
		send: request("GET /env", "X-Env: dev", "X-Env: prod"), status: []int{429}, counted: []string{"prod - limited"}},
	{name: "matched header sent twice, the value first", prime: primeProd,
		send: request("GET /env", "X-Env: prod", "x-env: dev"), status: []int{429}, counted: []string{"prod - limited"}},
	{name: "matched header as a list", prime: primeProd, send: request("GET /env", "X-Env: dev, prod"), status: []int{429},
		counted: []string{"prod - limited"}},
	{name: "matched header with spaces and tabs", prime: primeProd, send: request("GET /env", "X-Env: \t prod \t"), status: []int{429},
		counted: []string{"prod - limited"}},
	{name: "matched header in an obs-fold", prime: primeProd, send: "GET /env HTTP/1.1\r\nHost: x\r\nX-Env:\r\n prod\r\n\r\n",
		status: []int{429}, counted: []string{"prod - limited"}},
	{name: "matched header respelled: not sent on (a longer name is another field)", prime: primeProd, send: request("GET /env", "X_Env: prod", "X-ENV_: prod"),
		status: []int{200}, received: []string{"GET /env | X-Env_: prod"}},
	{name: "matched header respelled beside a dev one", prime: primeProd, send: request("GET /env", "X-Env: dev", "X_ENV: prod"),
		status: []int{200}, received: []string{"GET /env | X-Env: dev"}},
	{name: "matched header with a space before its colon", prime: primeProd, send: request("GET /env", "X-Env : prod"),
		status: []int{400}},
	{name: "matched header with a space in its name", prime: primeProd, send: request("GET /env", "X Env: prod"),
		status: []int{400}},
	{name: "present header sent empty", prime: []string{request("GET /debug", "X-Debug: 1")},
		send: request("GET /debug", "x-debug:"), status: []int{429}, counted: []string{"debug - limited"}},
}

func TestHostAttacks(t *testing.T) {
	rows := make([]attack, len(hostAttacks))
	for i, a := range hostAttacks {
		a.config = hostAttackConfig
		rows[i] = a
	}
	runAttacks(t, rows)
}
