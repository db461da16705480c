package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// keysConfig: partner-a and partner-b by key, anonymous callers; claims
// allows 2 GETs a minute per client, by-ip 50 a minute per address, and
// tenant 20 a minute per X-Tenant value (partner-b 40 of its own).
const keysConfig = `listen: 127.0.0.1:18080
upstream: {{UPSTREAM}}
admin: 127.0.0.1:18090
clients:
  unknown: anonymous
  list:
    - id: partner-a
      keys: [` + keyA + `]
      plan: gold
    - id: partner-b
      keys: [` + keyB + `]
      limits: { tenant: 40/m }
plans:
  gold: { by-ip: 90/m }
rules:
  - name: claims
    match: { path: /claims, methods: [GET] }
    algorithm: fixed_window
    rate: 2/m
  - name: by-ip
    match: { path: /claims }
    key: ip
    algorithm: sliding_window
    rate: 50/m
  - name: tenant
    match: { path: /claims }
    key: header:X-Tenant
    algorithm: gcra
    rate: 20/m
`

// counterAnswer is the part of a counter's JSON the tests read.
type counterAnswer struct {
	Rule, Client, Counted, Source, Counter, Rate, Algorithm, Mode string
	Limit, Remaining                                              int64
	Used, ResetS, RetryS                                          float64
}

func (c *counterAnswer) UnmarshalJSON(b []byte) error {
	var raw struct {
		Rule, Client, Counted, Source, Counter, Rate, Algorithm, Mode string
		Limit, Remaining                                              int64
		Used                                                          float64
		ResetS                                                        float64 `json:"reset_s"`
		RetryS                                                        float64 `json:"retry_s"`
	}
	err := json.Unmarshal(b, &raw)
	*c = counterAnswer{raw.Rule, raw.Client, raw.Counted, raw.Source, raw.Counter, raw.Rate, raw.Algorithm, raw.Mode,
		raw.Limit, raw.Remaining, raw.Used, raw.ResetS, raw.RetryS}
	return err
}

func decodeJSON[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("Content-Type %q, want application/json (%d %s)", r.Header.Get("Content-Type"), r.Status, r.Body)
	}
	if err := json.Unmarshal([]byte(r.Body), &v); err != nil {
		t.Fatalf("answer is not the JSON expected: %v\n%s", err, r.Body)
	}
	return v
}

// TestKeysReadsAndResets: GET /api/v1/keys shows a client's counter
// without spending it; once the client is limited it shows no room and
// the wait; DELETE resets it, and the client's next request passes.
func TestKeysReadsAndResets(t *testing.T) {
	h := startGateway(t, keysConfig)
	const path = "/api/v1/keys?rule=claims&client=partner-a"
	for range 3 {
		r := h.admin(http.MethodGet, path)
		c := decodeJSON[counterAnswer](t, r)
		if r.Status != 200 || c.Remaining != 2 || c.Limit != 2 || c.Used != 0 || c.Counted != "partner-a" || c.Counter != "local" ||
			c.Rate != "2/m" || c.Source != "rule" {
			t.Fatalf("GET %s before any request: %d %s", path, r.Status, r.Body)
		}
	}
	for i := range 3 {
		if got := h.get("/claims/7", keyA).Status; got != []int{200, 200, 429}[i] {
			t.Fatalf("request %d: %d", i, got)
		}
	}
	r := h.admin(http.MethodGet, path)
	c := decodeJSON[counterAnswer](t, r)
	if c.Remaining != 0 || c.Used != 1 || c.RetryS <= 0 || c.ResetS <= 0 {
		t.Errorf("GET once limited: %s; want 0 remaining, used 1, a wait", r.Body)
	}
	if strings.Contains(r.Body, keyA) {
		t.Error("the answer holds the access key")
	}
	ip := decodeJSON[counterAnswer](t, h.admin(http.MethodGet, "/api/v1/keys?rule=by-ip&client=partner-a&counted=127.0.0.1"))
	if ip.Remaining != 88 || ip.Source != "plan:gold" || ip.Counted != "127.0.0.1" {
		t.Errorf("by-ip of partner-a: %+v; want 88 of 90 left (gold's limit: two passed)", ip)
	}
	tenant := decodeJSON[counterAnswer](t, h.admin(http.MethodGet, "/api/v1/keys?rule=tenant&counted="))
	if tenant.Counted != "requests without header X-Tenant" || tenant.Remaining != 18 {
		t.Errorf("tenant without the header: %+v; want 18 of 20 left", tenant)
	}
	r = h.admin(http.MethodDelete, path)
	if r.Status != 200 || !strings.Contains(r.Body, `"reset": true`) {
		t.Fatalf("DELETE %s: %d %s", path, r.Status, r.Body)
	}
	if got := h.get("/claims/7", keyA); got.Status != 200 {
		t.Errorf("request after the reset: %d %s, want 200", got.Status, got.Body)
	}
	if got := h.get("/claims/7", keyB); got.Status != 200 {
		t.Errorf("partner-b: %d, want 200 (its counter is its own)", got.Status)
	}
	if n := h.logs.count(t, "counter reset"); n != 1 {
		t.Errorf("%d \"counter reset\" log lines, want 1", n)
	}
}

// TestKeysProblems: what cannot be looked up is a problem+json saying
// why: 404 naming what exists, 400 saying what would be accepted.
func TestKeysProblems(t *testing.T) {
	h := startGateway(t, keysConfig)
	for _, c := range []struct {
		method, query string
		status        int
		says          string
	}{
		{"GET", "", 400, "rule=NAME is required (rules: claims, by-ip, tenant)"},
		{"GET", "rule=nope&client=partner-a", 404, `no rule \"nope\" (rules: claims, by-ip, tenant)`},
		{"DELETE", "rule=nope", 404, "rules: claims, by-ip, tenant"},
		{"GET", "rule=claims&client=partner-z", 404, "clients: anonymous, partner-a, partner-b"},
		{"DELETE", "rule=claims&client=partner-z", 404, "clients: anonymous, partner-a, partner-b"},
		{"GET", "rule=by-ip&client=partner-a", 400, "counts partner-a by address"},
		{"GET", "rule=by-ip&counted=10.0.0", 400, "is not an address"},
		{"GET", "rule=claims&rule=by-ip", 400, "rule given 2 times"},
		{"GET", "rule=claims&key=" + keyA, 400, `unknown parameter \"key\" (accepted: rule, client, counted)`},
		{"GET", "rule=claims&client=%zz", 400, "cannot be parsed"},
	} {
		r := h.admin(c.method, "/api/v1/keys?"+c.query)
		if r.Status != c.status || !strings.Contains(r.Body, c.says) || r.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s ?%s: %d %s %s; want %d problem+json saying %q", c.method, c.query, r.Status, r.Header.Get("Content-Type"), r.Body, c.status, c.says)
		}
		if strings.Contains(r.Body, keyA) {
			t.Errorf("%s ?%s: the problem repeats the access key", c.method, c.query)
		}
	}
}

// explainAnswer is the part of an explanation the tests read.
type explainAnswer struct {
	Request struct{ Method, Path, Client, Plan, Address string }
	Rules   []counterAnswer
	Would   struct {
		Status int
		Detail string
		RetryS float64 `json:"retry_s"`
	}
	Store struct{ Type, State string }
}

// TestExplainAPI: GET /api/v1/explain names the caller, what each rule
// counts it as, the limit and its source, and what it would get, and
// spends nothing; a query it cannot read is a 400 saying why.
func TestExplainAPI(t *testing.T) {
	h := startGateway(t, keysConfig)
	q := url.Values{"method": {"get"}, "path": {"/claims/7"}, "key": {keyA}, "ip": {"192.0.2.7"}, "header": {"X-Tenant:acme"}}
	path := "/api/v1/explain?" + q.Encode()
	for range 3 {
		r := h.admin(http.MethodGet, path)
		ex := decodeJSON[explainAnswer](t, r)
		if ex.Request.Client != "partner-a" || ex.Request.Plan != "gold" || ex.Request.Method != "GET" || ex.Request.Address != "192.0.2.7" ||
			ex.Would.Status != 200 || len(ex.Rules) != 3 || ex.Store.Type != "memory" {
			t.Fatalf("explain: %s", r.Body)
		}
		want := [][3]string{{"claims", "partner-a", "rule"}, {"by-ip", "192.0.2.7", "plan:gold"}, {"tenant", `header X-Tenant "acme"`, "rule"}}
		for i, w := range want {
			if got := ex.Rules[i]; got.Rule != w[0] || got.Counted != w[1] || got.Source != w[2] || got.Remaining != got.Limit {
				t.Errorf("rule %d: %+v, want %v with nothing spent", i, got, w)
			}
		}
		if strings.Contains(r.Body, keyA) {
			t.Fatal("the explanation holds the access key")
		}
	}
	h.get("/claims/7", keyA)
	h.get("/claims/7", keyA)
	ex := decodeJSON[explainAnswer](t, h.admin(http.MethodGet, path))
	if ex.Would.Status != 429 || ex.Would.RetryS <= 0 || !strings.Contains(ex.Would.Detail, "rule claims has no room for partner-a") {
		t.Errorf("explain once limited: %+v, want 429 naming claims", ex.Would)
	}
	for _, c := range []struct{ query, says string }{
		{"path=/claims&ip=10.0.0", `ip=\"10.0.0\" is not an address`},
		{"path=/claims&header=X-Tenant", `give NAME:VALUE`},
		{"path=/claims&header=Bad%20Name:x", `give NAME:VALUE`},
		{"method=GET", `give the request's path from its '/'`},
		{"path=claims", `give the request's path from its '/'`},
		{"path=/claims&method=G%20T", `is not an HTTP method`},
		{"path=/claims&path=/x", `path given 2 times`},
		{"path=/claims&peer=1.2.3.4", `unknown parameter \"peer\"`},
		{"path=%zz", "cannot be parsed"},
	} {
		r := h.admin(http.MethodGet, "/api/v1/explain?"+c.query)
		if r.Status != 400 || !strings.Contains(r.Body, c.says) || r.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("explain ?%s: %d %s; want 400 problem+json saying %q", c.query, r.Status, r.Body, c.says)
		}
	}
	// What the request itself would be refused for is an explanation, not a bad query.
	for _, c := range []struct {
		query  string
		status int
		says   string
	}{
		{"path=/claims/%25zz", 400, "cannot be read one way only"},
		{"path=/claims&key=" + keyA + "&header=X-API-Key:" + keyB, 400, "sent 2 times"},
		{"path=/claims&header=X-Tenant:a&header=X-Tenant:b", 400, "X-Tenant sent 2 times"},
	} {
		r := h.admin(http.MethodGet, "/api/v1/explain?"+c.query)
		ex := decodeJSON[explainAnswer](t, r)
		if r.Status != 200 || ex.Would.Status != c.status || !strings.Contains(ex.Would.Detail, c.says) {
			t.Errorf("explain ?%s: %s; want would %d saying %q", c.query, r.Body, c.status, c.says)
		}
		if strings.Contains(r.Body, keyA) || strings.Contains(r.Body, keyB) {
			t.Errorf("explain ?%s: the answer holds an access key", c.query)
		}
	}
}

// TestKeysResetRefusedCrossOrigin: a web page open on the operator's
// machine cannot reset a counter (a DELETE is a write): the browser's
// Origin or Sec-Fetch-Site gives it away, and the counter stays. Raw
// requests, as a browser writes them.
func TestKeysResetRefusedCrossOrigin(t *testing.T) {
	h := startGateway(t, keysConfig)
	for range 2 {
		h.get("/claims/7", keyA)
	}
	adm := h.adminHostPort()
	const target = "/api/v1/keys?rule=claims&client=partner-a"
	for _, c := range []struct{ name, fields string }{
		{"Origin of another site", "Origin: http://evil.example\r\n"},
		{"Sec-Fetch-Site: cross-site", "Sec-Fetch-Site: cross-site\r\n"},
		{"both", "Origin: http://evil.example\r\nSec-Fetch-Site: cross-site\r\n"},
		{"same-site, another port", "Origin: http://127.0.0.1:1\r\nSec-Fetch-Site: same-site\r\n"},
	} {
		if got, body := h.rawAdmin("DELETE " + target + " HTTP/1.1\r\nHost: " + adm + "\r\n" + c.fields + "\r\n"); got != 403 {
			t.Errorf("%s: DELETE answered %d %s, want 403", c.name, got, body)
		}
	}
	if got := h.get("/claims/7", keyA).Status; got != 429 {
		t.Fatalf("after the refused resets: %d, want 429 (the counter stays)", got)
	}
	if got, body := h.rawAdmin("DELETE " + target + " HTTP/1.1\r\nHost: " + adm + "\r\n\r\n"); got != 200 {
		t.Fatalf("curl-like DELETE: %d %s, want 200", got, body)
	}
	if got := h.get("/claims/7", keyA).Status; got != 200 {
		t.Errorf("after the reset: %d, want 200", got)
	}
}
