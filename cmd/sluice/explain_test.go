package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/steering"
)

// explainConfig: partner-a on the gold plan, claims per client and
// by-ip per address on /claims, tenant per X-Tenant on /claims, and a
// writes rule that GET never matches.
const explainConfig = `listen: 127.0.0.1:8080
upstream: http://127.0.0.1:9000
clients:
  unknown: anonymous
  list:
    - { id: partner-a, keys: [key-a], plan: gold }
plans:
  gold: { claims: 200/m }
rules:
  - name: claims
    match: { path: /claims, methods: [GET] }
    rate: 100/m
  - name: by-ip
    match: { path: /claims }
    key: ip
    algorithm: fixed_window
    rate: 1000/m
  - name: tenant
    match: { path: /claims }
    key: header:X-Tenant
    rate: 10/s
  - name: writes
    match: { path: /claims, methods: [POST] }
    rate: 10/m
`

// explained is the part of check --explain's JSON the tests read.
type explained struct {
	Request struct{ Method, Path, Client, Plan, Address string }
	Rules   []struct {
		Rule, Counted, Source, Rate, Counter string
		Remaining, Limit                     int64
	}
	Would struct {
		Status int
		Detail string
	}
}

// TestCheckExplain: check --explain prints, for the file, the rules the
// request matches, what each counts it as, its limit and where that comes
// from, and what it would get on fresh counters; never the access key.
func TestCheckExplain(t *testing.T) {
	path := writeFile(t, "sluice.yaml", explainConfig)
	code, out, errs := runCmd("check", "--config", path, "--explain", "GET /claims/7", "--key", "key-a", "--ip", "192.0.2.7",
		"--header", "X-Tenant: acme")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	var ex explained
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatalf("stdout is not the explanation's JSON: %v\n%s", err, out)
	}
	if ex.Request.Client != "partner-a" || ex.Request.Plan != "gold" || ex.Request.Path != "/claims/7" || ex.Request.Address != "192.0.2.7" ||
		ex.Would.Status != 200 || len(ex.Rules) != 3 {
		t.Fatalf("explanation:\n%s", out)
	}
	want := [][3]string{{"claims", "partner-a", "plan:gold 200/m"}, {"by-ip", "192.0.2.7", "rule 1000/m"}, {"tenant", `header X-Tenant "acme"`, "rule 10/s"}}
	for i, w := range want {
		r := ex.Rules[i]
		if r.Rule != w[0] || r.Counted != w[1] || r.Source+" "+r.Rate != w[2] || r.Remaining != r.Limit || r.Counter != "fresh" {
			t.Errorf("rule %d: %+v, want %v on a fresh counter", i, r, w)
		}
	}
	if strings.Contains(out, "key-a") {
		t.Error("the explanation shows the access key")
	}
	// Without a key: anonymous; a path alone means GET.
	code, out, _ = runCmd("check", "--config", path, "--explain", "/claims")
	if err := json.Unmarshal([]byte(out), &ex); code != 0 || err != nil || ex.Request.Client != "anonymous" || ex.Request.Method != "GET" {
		t.Errorf("--explain /claims: exit %d\n%s", code, out)
	}
	// A request sluice would refuse is explained, with why.
	code, out, _ = runCmd("check", "--config", path, "--explain", "GET /claims", "--header", "X-Tenant:a", "--header", "X-Tenant:b")
	if err := json.Unmarshal([]byte(out), &ex); code != 0 || err != nil || ex.Would.Status != 400 || !strings.Contains(ex.Would.Detail, "X-Tenant sent 2 times") {
		t.Errorf("two X-Tenant: exit %d\n%s", code, out)
	}
}

// TestCheckExplainBadInput: a request check cannot read is exit 2 with
// why on stderr.
func TestCheckExplainBadInput(t *testing.T) {
	path := writeFile(t, "sluice.yaml", explainConfig)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--explain", "GET claims"}, "give the request's path from its '/'"},
		{[]string{"--explain", "G;T /claims"}, "is not an HTTP method"},
		{[]string{"--explain", "GET /claims", "--ip", "192.0.2"}, `ip="192.0.2" is not an address`},
		{[]string{"--explain", "GET /claims", "--header", "X-Tenant"}, "give NAME:VALUE"},
		{[]string{"--key", "key-a"}, "--explain 'METHOD PATH', which is missing"},
	} {
		code, out, errs := runCmd(append([]string{"check", "--config", path}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errs, c.says) {
			t.Errorf("check %v: exit %d, stdout %q, stderr %q; want 2 saying %q", c.args, code, out, errs, c.says)
		}
	}
}

// TestCheckExplainOverride: check --explain applies the run-time overrides
// the instances apply (here the memory store's runtime file) and names one
// as the limit's source; a blocked client is explained as its 403.
func TestCheckExplainOverride(t *testing.T) {
	path := writeFile(t, "sluice.yaml", explainConfig)
	m := steering.New(steering.Options{Backend: steering.NewFileBackend(config.DefaultRuntimeFile(path), nil)})
	ctx := context.Background()
	if _, err := m.Put(ctx, steering.Change{Target: "partner-a", Rule: "claims", Rate: "5/m", Reason: "incident", Author: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Put(ctx, steering.Change{Target: "ip:192.0.2.0/24", Rule: "by-ip", Rate: "50/m", Reason: "incident", Author: "t"}); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd("check", "--config", path, "--explain", "GET /claims/7", "--key", "key-a", "--ip", "192.0.2.7")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	var ex explained
	if err := json.Unmarshal([]byte(out), &ex); err != nil || len(ex.Rules) < 2 {
		t.Fatalf("stdout: %v\n%s", err, out)
	}
	if r := ex.Rules[0]; r.Source+" "+r.Rate != "override:partner-a 5/m" {
		t.Errorf("claims: %+v, want the override as its source", r)
	}
	if r := ex.Rules[1]; r.Source+" "+r.Rate != "override:ip:192.0.2.0/24 50/m" {
		t.Errorf("by-ip: %+v, want the range's override as its source", r)
	}
	if _, err := m.Put(ctx, steering.Change{Target: "partner-a", Block: true, Reason: "stolen key", Author: "t"}); err != nil {
		t.Fatal(err)
	}
	_, out, _ = runCmd("check", "--config", path, "--explain", "GET /claims/7", "--key", "key-a")
	if err := json.Unmarshal([]byte(out), &ex); err != nil || ex.Would.Status != 403 || !strings.Contains(ex.Would.Detail, "partner-a is blocked") {
		t.Errorf("blocked partner-a: %v\n%s", err, out)
	}
}
