package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
)

// steerConfig is a configuration of two clients and two rules, on the
// store given ("" for memory), with {{UPSTREAM}} to fill in. Redis counts
// by its own clock: claims's window is a day, so that no test crosses its
// end (but at midnight UTC).
func steerConfig(storeBlock string) string {
	return `listen: 127.0.0.1:0
upstream: {{UPSTREAM}}
` + storeBlock + `clients:
  list:
    - id: partner-a
      keys: [key-a]
    - id: partner-b
      keys: [key-b]
rules:
  - name: claims
    match: { path: /claims }
    algorithm: fixed_window
    rate: 5/d
  - name: exports
    match: { path: /exports }
    algorithm: token_bucket
    rate: 10/m
    cost: 4
`
}

// fleet is several gateways on one store.
type fleet []*harness

// startFleet serves n gateways of cfg, each with its own upstream.
func startFleet(t *testing.T, n int, cfg string) fleet {
	t.Helper()
	var f fleet
	for range n {
		f = append(f, startGateway(t, cfg))
	}
	return f
}

// change sends a run-time change to h's admin side and returns its
// answer.
func (h *harness) change(method, path, body string) response {
	h.t.Helper()
	hdr := map[string]string{}
	if body != "" {
		hdr["Content-Type"] = "application/json"
	}
	return h.do(h.adminURL, method, path, hdr, body)
}

// runtimeVersion is the runtime version h applies.
func (h *harness) runtimeVersion() uint64 {
	h.t.Helper()
	r := h.admin(http.MethodGet, "/api/v1/overrides")
	var out struct {
		Version uint64 `json:"version"`
	}
	if err := json.Unmarshal([]byte(r.Body), &out); err != nil {
		h.t.Fatalf("GET /api/v1/overrides: %d %s", r.Status, r.Body)
	}
	return out.Version
}

// converge waits until every instance applies version v and returns how
// long that took; it fails the test beyond limit.
func (f fleet) converge(t *testing.T, v uint64, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for _, h := range f {
		for h.runtimeVersion() < v {
			if time.Since(start) > limit {
				t.Fatalf("an instance still applies version %d after %v, want %d", h.runtimeVersion(), limit, v)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return time.Since(start)
}

// statuses sends n GET path requests with key, round robin over the
// instances, and returns the statuses in order.
func (f fleet) statuses(n int, path, key string) []int {
	var out []int
	for i := range n {
		out = append(out, f[i%len(f)].get(path, key).Status)
	}
	return out
}

func count(statuses []int, status int) int {
	n := 0
	for _, s := range statuses {
		if s == status {
			n++
		}
	}
	return n
}

// TestSteeringAcrossInstances: on Redis and Redis Cluster, an override
// made at one instance is enforced exactly at all three within a second;
// a block answers 403 at all three; a restarted instance keeps both; an
// expiry gives the file's limit back at all three, counters kept.
func TestSteeringAcrossInstances(t *testing.T) {
	for _, kind := range []string{"redis", "cluster"} {
		t.Run(kind, func(t *testing.T) {
			var addrs []string
			if kind == "redis" {
				addrs = []string{redistest.StartServer(t).Addr}
			} else {
				addrs = redistest.StartCluster(t).Addrs
			}
			st := "store: {type: redis, redis: {addrs: [" + strings.Join(addrs, ", ") + "], prefix: " + redistest.KeyPrefix(t) + ", timeout: 5s}}\n"
			cfg := steerConfig(st)
			f := startFleet(t, 3, cfg)
			r := f[0].change(http.MethodPut, "/api/v1/overrides/partner-a",
				`{"rule": "claims", "rate": "2/d", "ttl": "3s", "reason": "partner-a floods /claims"}`)
			if r.Status != http.StatusOK {
				t.Fatalf("PUT override: %d %s", r.Status, r.Body)
			}
			var put struct {
				Override struct {
					ExpiresInS float64 `json:"expires_in_s"`
				}
			}
			if err := json.Unmarshal([]byte(r.Body), &put); err != nil || put.Override.ExpiresInS <= 0 || put.Override.ExpiresInS > 3 {
				t.Errorf("expires_in_s %v of a 3s ttl (%v): measured on the store's clock, not the gateway's fake one", put.Override.ExpiresInS, err)
			}
			if took := f.converge(t, 1, time.Second); took > time.Second {
				t.Errorf("converged in %v", took)
			}
			got := f.statuses(6, "/claims", "key-a")
			if count(got, 200) != 2 || count(got, 429) != 4 {
				t.Errorf("partner-a across 3 instances under 2/d: %v, want 2 passed then 429s", got)
			}
			if v := metric(f[2].metrics(), "sluice_runtime_version"); v != 1 {
				t.Errorf("sluice_runtime_version at another instance: %v, want 1", v)
			}
			if got := f.statuses(6, "/claims", "key-b"); count(got, 200) != 5 {
				t.Errorf("partner-b (no override, 5/d): %v, want 5 passed", got)
			}
			r = f[1].change(http.MethodPut, "/api/v1/overrides/partner-b", `{"block": true, "ttl": "1h", "reason": "stolen key"}`)
			if r.Status != http.StatusOK {
				t.Fatalf("PUT block: %d %s", r.Status, r.Body)
			}
			f.converge(t, 2, time.Second)
			for i, h := range f {
				r := h.get("/exports", "key-b")
				if r.Status != http.StatusForbidden || !strings.Contains(r.Body, "partner-b") || strings.Contains(r.Body, "stolen") {
					t.Errorf("instance %d, blocked partner-b: %d %s, want 403 naming the client, never the reason", i, r.Status, r.Body)
				}
			}
			// A restart keeps both.
			f[2].stop()
			f[2] = startGateway(t, cfg)
			if r := f[2].get("/exports", "key-b"); r.Status != http.StatusForbidden {
				t.Errorf("restarted instance, blocked partner-b: %d, want 403", r.Status)
			}
			if r := f[2].get("/claims", "key-a"); r.Status != http.StatusTooManyRequests {
				t.Errorf("restarted instance, partner-a under its override: %d, want 429", r.Status)
			}
			// The override expires (by Redis TIME) at every instance: the
			// file's 5/d is back, with the counter kept (the 2 that
			// passed; a refused request counts nothing).
			f.converge(t, 3, 10*time.Second) // the expiry is version 3
			got = f.statuses(6, "/claims", "key-a")
			if count(got, 200) != 3 {
				t.Errorf("partner-a after its override expired: %v, want 3 passed (5/d, 2 already counted)", got)
			}
			recs := auditOf(t, f[1])
			actions := []string{}
			for _, rec := range recs {
				actions = append(actions, rec.Action+" "+rec.Target)
			}
			if want := []string{"expire partner-a", "set partner-b", "set partner-a"}; !slices.Equal(actions, want) {
				t.Errorf("audit: %v, want %v", actions, want)
			}
		})
	}
}

type auditRecord struct {
	Action, Target, Rule, From, To, Author, Reason string
	Version                                        uint64
}

func auditOf(t *testing.T, h *harness) []auditRecord {
	t.Helper()
	r := h.admin(http.MethodGet, "/api/v1/audit")
	var out struct{ Records []auditRecord }
	if err := json.Unmarshal([]byte(r.Body), &out); err != nil || r.Status != http.StatusOK {
		t.Fatalf("GET /api/v1/audit: %d %s", r.Status, r.Body)
	}
	return out.Records
}

// TestSteeringRedisDown: while Redis is down the instances keep the last
// overrides (and say so) and refuse changes with 503; once it is back (its
// data lost), they write their state back and converge on new changes.
func TestSteeringRedisDown(t *testing.T) {
	srv := redistest.StartServer(t, "--save", "", "--appendonly", "no")
	st := "store: {type: redis, redis: {addrs: [" + srv.Addr + "], prefix: " + redistest.KeyPrefix(t) + "}, on_failure: open}\n"
	f := startFleet(t, 3, steerConfig(st))
	if r := f[0].change(http.MethodPut, "/api/v1/overrides/partner-b", `{"block": true, "reason": "stolen key"}`); r.Status != http.StatusOK {
		t.Fatalf("PUT block: %d %s", r.Status, r.Body)
	}
	f.converge(t, 1, time.Second)
	srv.Stop()
	for i, h := range f {
		if r := h.get("/claims", "key-b"); r.Status != http.StatusForbidden {
			t.Errorf("instance %d with Redis down: blocked partner-b got %d, want 403 (the block kept)", i, r.Status)
		}
	}
	eventually(t, "every instance says its overrides are stale", func() bool {
		for _, h := range f {
			if !strings.Contains(h.admin(http.MethodGet, "/api/v1/overrides").Body, `"stale": true`) {
				return false
			}
		}
		return true
	})
	if v := metric(f[0].metrics(), "sluice_runtime_stale"); v != 1 {
		t.Errorf("sluice_runtime_stale with Redis down: %v, want 1", v)
	}
	if r := f[1].change(http.MethodPut, "/api/v1/overrides/partner-a", `{"block": true, "reason": "x"}`); r.Status != http.StatusServiceUnavailable {
		t.Errorf("PUT with Redis down: %d %s, want 503", r.Status, r.Body)
	}
	srv.Restart(t)
	eventually(t, "the block is written back", func() bool {
		return f[2].runtimeVersion() == 1 && !strings.Contains(f[2].admin(http.MethodGet, "/api/v1/overrides").Body, `"stale": true`)
	})
	r := f[1].change(http.MethodDelete, "/api/v1/overrides/partner-b?reason=recovered", "")
	if r.Status != http.StatusOK {
		t.Fatalf("DELETE after the restart: %d %s", r.Status, r.Body)
	}
	f.converge(t, 2, time.Second)
	for i, h := range f {
		if r := h.get("/claims", "key-b"); r.Status != http.StatusOK {
			t.Errorf("instance %d after the block was removed: %d, want 200", i, r.Status)
		}
	}
}

// TestSteeringMemoryRestart: on the memory store the overrides live in
// runtime.file, and a restart keeps them.
func TestSteeringMemoryRestart(t *testing.T) {
	h := startGateway(t, steerConfig(""))
	if r := h.change(http.MethodPut, "/api/v1/overrides/ip:127.0.0.0/8", `{"rule": "claims", "rate": "1/m", "reason": "test"}`); r.Status != http.StatusOK {
		t.Fatalf("PUT: %d %s", r.Status, r.Body)
	}
	if got := (fleet{h}).statuses(3, "/claims", "key-a"); count(got, 200) != 1 {
		t.Errorf("under ip override 1/m: %v", got)
	}
	h.stop()
	h.serve()
	if got := (fleet{h}).statuses(2, "/claims", "key-b"); count(got, 200) != 1 {
		t.Errorf("after a restart, under the ip override 1/m kept: %v", got)
	}
	if !strings.Contains(h.admin(http.MethodGet, "/api/v1/overrides").Body, `"backend": "file"`) {
		t.Error("GET /api/v1/overrides does not name the file backend")
	}
}

// TestSteeringBadInput: each refused change is a 422 naming the field,
// and changes nothing.
func TestSteeringBadInput(t *testing.T) {
	h := startGateway(t, steerConfig("runtime: {max_ttl: 24h}\n"))
	for _, tc := range []struct {
		path, body, field string
	}{
		{"/api/v1/overrides/partner-x", `{"rule": "claims", "rate": "1/m", "ttl": "1h", "reason": "r"}`, "target"},
		{"/api/v1/overrides/ip:300.1.1.1", `{"block": true, "ttl": "1h", "reason": "r"}`, "target"},
		{"/api/v1/overrides/partner-a", `{"rule": "nope", "rate": "1/m", "ttl": "1h", "reason": "r"}`, "rule"},
		{"/api/v1/overrides/partner-a", `{"rule": "claims", "rate": "fast", "ttl": "1h", "reason": "r"}`, "rate"},
		{"/api/v1/overrides/partner-a", `{"rule": "exports", "rate": "3/m", "ttl": "1h", "reason": "r"}`, "rate"},
		{"/api/v1/overrides/partner-a", `{"rule": "claims", "rate": "1/m", "ttl": "0s", "reason": "r"}`, "ttl"},
		{"/api/v1/overrides/partner-a", `{"rule": "claims", "rate": "1/m", "ttl": "48h", "reason": "r"}`, "ttl"},
		{"/api/v1/overrides/partner-a", `{"rule": "claims", "rate": "1/m", "reason": "r"}`, "ttl"},
		{"/api/v1/overrides/partner-a", `{"rule": "claims", "rate": "1/m", "ttl": "1h"}`, "reason"},
		{"/api/v1/overrides/partner-a", `{"rule": "claims", "rate": "1/m", "ttl": "1h", "reason": "r", "extra": 1}`, "body"},
		{"/api/v1/overrides/partner-a", `not json`, "body"},
		{"/api/v1/overrides/partner-a", `{"reason": "` + strings.Repeat("x", 70<<10) + `"}`, "body"},
		{"/api/v1/overrides/partner-a", `{"block": true, "rule": "claims", "ttl": "1h", "reason": "r"}`, "block"},
		{"/api/v1/degrade", `{"ttl": "1h", "reason": "r"}`, "on"},
	} {
		r := h.change(http.MethodPut, tc.path, tc.body)
		var p struct {
			Field, Detail string
		}
		_ = json.Unmarshal([]byte(r.Body), &p)
		if r.Status != http.StatusUnprocessableEntity || p.Field != tc.field || r.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("PUT %s %.60s: %d %s, want 422 on %s", tc.path, tc.body, r.Status, r.Body, tc.field)
		}
	}
	if r := h.change(http.MethodDelete, "/api/v1/overrides/partner-a", ""); r.Status != http.StatusNotFound {
		t.Errorf("DELETE of nothing: %d, want 404", r.Status)
	}
	if v := h.runtimeVersion(); v != 0 {
		t.Errorf("refused changes made version %d", v)
	}
	if recs := auditOf(t, h); len(recs) != 0 {
		t.Errorf("refused changes audited: %+v", recs)
	}
	// Cross-origin writes are refused.
	r := h.do(h.adminURL, http.MethodPut, "/api/v1/degrade", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
		`{"on": true, "ttl": "1h", "reason": "r"}`)
	if r.Status != http.StatusForbidden {
		t.Errorf("cross-origin PUT: %d, want 403", r.Status)
	}
}

// TestSteeringTokenNames: with admin tokens, the audit trail names the
// token that made each change; without one, a change is refused 401.
func TestSteeringTokenNames(t *testing.T) {
	h := startGateway(t, steerConfig("admin: {listen: 127.0.0.1:0, tokens: {alice: alice-0123456789abcdef, bob: bob-0123456789abcdefg}}\n"))
	put := func(token, body string) response {
		return h.do(h.adminURL, http.MethodPut, "/api/v1/degrade", map[string]string{"Authorization": "Bearer " + token}, body)
	}
	if r := put("wrong", `{"on": true, "reason": "r"}`); r.Status != http.StatusUnauthorized {
		t.Errorf("wrong token: %d, want 401", r.Status)
	}
	if r := put("alice-0123456789abcdef", `{"on": true, "ttl": "1h", "reason": "checkout slow"}`); r.Status != http.StatusOK {
		t.Fatalf("alice: %d %s", r.Status, r.Body)
	}
	if r := put("bob-0123456789abcdefg", `{"on": false, "reason": "recovered"}`); r.Status != http.StatusOK {
		t.Fatalf("bob: %d %s", r.Status, r.Body)
	}
	r := h.do(h.adminURL, http.MethodGet, "/api/v1/audit", map[string]string{"Authorization": "Bearer bob-0123456789abcdefg"}, "")
	var out struct{ Records []auditRecord }
	_ = json.Unmarshal([]byte(r.Body), &out)
	if len(out.Records) != 2 || !strings.HasPrefix(out.Records[0].Author, "bob from ") || !strings.HasPrefix(out.Records[1].Author, "alice from ") ||
		out.Records[1].Action != "degrade_on" || out.Records[1].Reason != "checkout slow" {
		t.Errorf("audit: %+v", out.Records)
	}
}

// TestSteeringConvergence measures how long 3 instances on one Redis take
// to apply a change made at one of them (from its PUT sent until every
// instance's GET /api/v1/overrides names its version), over 100 changes, and logs the
// median and the worst (go test -run TestSteeringConvergence -v
// ./gateway/). Each change must be applied by all three within a second.
func TestSteeringConvergence(t *testing.T) {
	st := "store: {type: redis, redis: {addrs: [" + redistest.StartServer(t).Addr + "], prefix: " + redistest.KeyPrefix(t) + ", timeout: 5s}}\n"
	f := startFleet(t, 3, steerConfig(st))
	var took []time.Duration
	for i := range 100 {
		at := f[i%3]
		start := time.Now() // from the change's request on: its commit is part of the time
		r := at.change(http.MethodPut, "/api/v1/overrides/partner-a", fmt.Sprintf(`{"rule": "claims", "rate": "%d/m", "reason": "measure"}`, i+1))
		if r.Status != http.StatusOK {
			t.Fatalf("PUT %d: %d %s", i, r.Status, r.Body)
		}
		f.converge(t, uint64(i+1), time.Second)
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	t.Logf("time until all 3 instances apply a change, over %d changes: median %v, worst %v", len(took), took[len(took)/2], took[len(took)-1])
}

// TestScheduleAtGateway: a schedule entry in force limits by its rate; at
// its end (the fake clock crossing it) the file's rate is back, with the
// counter kept.
func TestScheduleAtGateway(t *testing.T) {
	// start is Friday 2025-03-14 09:26:37 UTC: inside 09:00-09:30.
	h := startGateway(t, `listen: 127.0.0.1:0
upstream: {{UPSTREAM}}
rules:
  - name: exports
    match: { path: /exports }
    key: global
    algorithm: fixed_window
    rate: 10/h
    schedule:
      - { hours: "09:00-09:30", rate: 2/h }
`)
	get := func() int { return h.get("/exports", "").Status }
	if got := []int{get(), get(), get()}; !slices.Equal(got, []int{200, 200, 429}) {
		t.Fatalf("inside the entry (2/h): %v", got)
	}
	if got := metric(h.metrics(), "sluice_limit", "rule=exports", "source=rule"); got != 2 {
		t.Errorf("sluice_limit inside the entry: %v, want 2", got)
	}
	h.clock.Advance(3*time.Minute + 23*time.Second) // 09:30:00, the entry's end; the hour's window goes on
	eventually(t, "the file's 10/h in force", func() bool {
		return metric(h.metrics(), "sluice_limit", "rule=exports", "source=rule") == 10
	})
	passed := 0
	for range 10 {
		if get() == 200 {
			passed++
		}
	}
	if passed != 8 {
		t.Errorf("after the entry ended: %d of 10 passed, want 8 (10/h, the 2 of the entry already counted)", passed)
	}
}

// TestDegradeSwitch: the degrade switch refuses degrade rules' requests
// and low ones with 503 at once, without protect; normal ones pass; off
// again, all pass.
func TestDegradeSwitch(t *testing.T) {
	h := startGateway(t, `listen: 127.0.0.1:0
upstream: {{UPSTREAM}}
rules:
  - { name: reports, match: { path: /reports }, degrade: true }
  - { name: exports, match: { path: /exports }, priority: low }
  - { name: claims, match: { path: /claims }, rate: 100/m }
`)
	statuses := func() []int {
		return []int{h.get("/reports", "").Status, h.get("/exports", "").Status, h.get("/claims", "").Status}
	}
	if got := statuses(); !slices.Equal(got, []int{200, 200, 200}) {
		t.Fatalf("before: %v", got)
	}
	if r := h.change(http.MethodPut, "/api/v1/degrade", `{"on": true, "ttl": "1h", "reason": "checkout slow"}`); r.Status != http.StatusOK || !strings.Contains(r.Body, `"on": true`) {
		t.Fatalf("PUT degrade on: %d %s", r.Status, r.Body)
	}
	if got := statuses(); !slices.Equal(got, []int{503, 503, 200}) {
		t.Errorf("degraded: %v, want reports and exports 503, claims 200", got)
	}
	if r := h.get("/reports", ""); r.Header.Get("Retry-After") == "" || !strings.Contains(r.Body, "switch") {
		t.Errorf("degraded answer: %v %s, want a Retry-After and the switch named", r.Header, r.Body)
	}
	if !strings.Contains(h.admin(http.MethodGet, "/api/v1/overview").Body, `"sources":["switch"]`) {
		t.Error("the overview does not say the switch degrades")
	}
	if r := h.change(http.MethodPut, "/api/v1/degrade", `{"on": false, "reason": "recovered"}`); r.Status != http.StatusOK {
		t.Fatalf("PUT degrade off: %d %s", r.Status, r.Body)
	}
	if got := statuses(); !slices.Equal(got, []int{200, 200, 200}) {
		t.Errorf("after: %v", got)
	}
}

// TestOverridesSurviveReload: a reload keeps the overrides; one whose
// rule the reload removed is left out and listed, and applies again when
// the rule is back.
func TestOverridesSurviveReload(t *testing.T) {
	cfg := steerConfig("")
	h := startGateway(t, cfg)
	if r := h.change(http.MethodPut, "/api/v1/overrides/partner-a", `{"rule": "claims", "rate": "1/m", "reason": "r"}`); r.Status != http.StatusOK {
		t.Fatalf("PUT: %d %s", r.Status, r.Body)
	}
	if r := h.admin(http.MethodPost, "/reload"); r.Status != http.StatusOK {
		t.Fatalf("reload: %d %s", r.Status, r.Body)
	}
	if got := (fleet{h}).statuses(2, "/claims", "key-a"); !slices.Equal(got, []int{200, 429}) {
		t.Errorf("after a reload, under the override 1/m: %v", got)
	}
	if body := h.admin(http.MethodGet, "/api/v1/overview").Body; !strings.Contains(body, `"client":"partner-a","counted":"partner-a","limit":1,"source":"override:partner-a"`) {
		t.Errorf("the overview does not name the override as partner-a's limit's source:\n%s", body)
	}
	h.writeConfig(strings.Replace(cfg, "  - name: claims\n    match: { path: /claims }\n    algorithm: fixed_window\n    rate: 5/d\n", "", 1))
	if r := h.admin(http.MethodPost, "/reload"); r.Status != http.StatusOK {
		t.Fatalf("reload without claims: %d %s", r.Status, r.Body)
	}
	if body := h.admin(http.MethodGet, "/api/v1/overrides").Body; !strings.Contains(body, `"ignored"`) || !strings.Contains(body, "partner-a on rule claims") {
		t.Errorf("the override of a removed rule is not listed as left out:\n%s", body)
	}
	h.writeConfig(cfg)
	if r := h.admin(http.MethodPost, "/reload"); r.Status != http.StatusOK {
		t.Fatalf("reload with claims: %d %s", r.Status, r.Body)
	}
	if body := h.admin(http.MethodGet, "/api/v1/overrides").Body; strings.Contains(body, `"ignored"`) {
		t.Errorf("the override still left out once its rule is back:\n%s", body)
	}
}

// TestOverrideLogBound: on the memory store, an override whose sliding_log
// logs could exceed store.memory.max_log_entries is refused, as the file's
// own limits would be.
func TestOverrideLogBound(t *testing.T) {
	h := startGateway(t, `listen: 127.0.0.1:0
upstream: {{UPSTREAM}}
store: { memory: { max_log_entries: 10000 } }
clients:
  list: [{ id: partner-a, keys: [key-a] }, { id: partner-b, keys: [key-b] }]
rules:
  - { name: logs, match: { path: /logs }, algorithm: sliding_log, rate: 100/m }
`)
	r := h.change(http.MethodPut, "/api/v1/overrides/partner-a", `{"rule": "logs", "rate": "9950/m", "reason": "r"}`)
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, "max_log_entries") {
		t.Errorf("an override beyond the log bound: %d %s, want 422 naming max_log_entries", r.Status, r.Body)
	}
	if r := h.change(http.MethodPut, "/api/v1/overrides/partner-a", `{"rule": "logs", "rate": "2000/m", "reason": "r"}`); r.Status != http.StatusOK {
		t.Errorf("an override within the bound: %d %s", r.Status, r.Body)
	}
}
