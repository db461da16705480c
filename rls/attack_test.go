package rls

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/config/storeopen"
	"github.com/sluice-rl/sluice/decision"
)

// floodPolicy counts by address and by X-Tenant, 2 an hour, as the
// attack of issue 15 item 3 met them.
const floodPolicy = `
listen: 127.0.0.1:8080
upstream: http://127.0.0.1:9000
store: {memory: {max_keys: 1000, max_rls_keys: 1000}}
rules:
  - {name: per-ip, match: {path: /ip}, key: ip, rate: 2/h}
  - {name: per-tenant, match: {path: /tenant}, key: "header:X-Tenant", rate: 2/h}
`

// startFlood serves rlRules and policy (floodPolicy: a memory store of
// 1,000 keys and 1,000 of rls's), the store opened as sluice serve opens it
// (gateway/store.go).
func startFlood(t *testing.T, policy string) *harness {
	t.Helper()
	f, err := config.Parse("t.yaml", []byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(epoch)
	st, err := storeopen.Open(context.Background(), f.Store, storeopen.Options{Clock: clk, Guest: decision.ForeignKey})
	if err != nil {
		t.Fatal(err)
	}
	e, err := decision.New(decision.Options{Store: st, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	decide := func(ctx context.Context, req decision.Request) *decision.Verdict {
		return e.Decide(ctx, decision.Settings{Policy: f.Compiled}, req)
	}
	return startWith(t, rulesFrom(t, rlRules), st, clk, Options{Decide: decide})
}

// flood sends calls x 1,000 descriptors, each with its own 1/HOUR limit
// and hit once: counters at their limit for an hour, as many as a caller
// likes.
func (h *harness) flood(calls int) {
	h.t.Helper()
	for c := range calls {
		descs := make([]*rlv3.RateLimitDescriptor, 1000)
		for i := range descs {
			descs[i] = desc(fmt.Sprintf("attacker=%d-%d", c, i))
			descs[i].Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_HOUR}
		}
		h.ask(request("rl", descs...))
	}
}

// TestAttackCallerCountersTakeNoRoom (issue 15 item 3): 20 calls x 1,000
// descriptors with 1/HOUR overrides, twenty times the store's 1,000 keys,
// leave fresh addresses, fresh X-Tenant values (the policy's keys, as
// /check and Envoy's remote_address send them) and fresh values of a rule
// file's descriptor their own first requests.
func TestAttackCallerCountersTakeNoRoom(t *testing.T) {
	h := startFlood(t, floodPolicy)
	h.flood(20)
	for i := range 50 {
		addr := fmt.Sprintf("192.0.2.%d", i+1)
		if resp := h.ask(request("sluice", desc("remote_address="+addr, ":path=/ip"))); resp.GetOverallCode() != pb.RateLimitResponse_OK {
			t.Fatalf("fresh address %s after the flood: %s, %s", addr, brief(resp), resp.GetRawBody())
		}
	}
	for i := range 50 {
		tenant := fmt.Sprintf("header:x-tenant=t%d", i)
		if resp := h.ask(request("sluice", desc("remote_address=198.51.100.1", ":path=/tenant", tenant))); resp.GetOverallCode() != pb.RateLimitResponse_OK {
			t.Fatalf("fresh %s after the flood: %s, %s", tenant, brief(resp), resp.GetRawBody())
		}
	}
	for i := range 50 {
		if got := brief(h.ask(request("rl", desc(fmt.Sprintf("foo=fresh-%d", i))))); got != "OK OK/1/60s" {
			t.Fatalf("fresh foo=fresh-%d after the flood: %q, want its own first count", i, got)
		}
	}
}

// TestAttackOverflowDetailIsTruthful (issue 15 item 3): in a store full of
// the policy's own limited keys (one room: max_keys 1), fresh addresses
// are counted together on the rule's overflow counter; the one refused
// there is told so, not that it exceeded a limit it never used.
func TestAttackOverflowDetailIsTruthful(t *testing.T) {
	h := startFlood(t, strings.Replace(floodPolicy, "max_keys: 1000", "max_keys: 1", 1))
	ask := func(addr string) *pb.RateLimitResponse {
		return h.ask(request("sluice", desc("remote_address="+addr, ":path=/ip")))
	}
	ask("192.0.2.1")
	ask("192.0.2.1") // at its limit: the store's one key, never evicted
	for _, addr := range []string{"192.0.2.2", "192.0.2.3"} {
		if resp := ask(addr); resp.GetOverallCode() != pb.RateLimitResponse_OK {
			t.Fatalf("%s on the overflow counter: %s, want one of its 2", addr, brief(resp))
		}
	}
	resp := ask("192.0.2.4")
	body := string(resp.GetRawBody())
	const want = `"detail":"the store is full: 192.0.2.4 is counted together with every caller it has no room for, ` +
		`and together they used the 2 requests per 1h of rule per-ip; retry in 360`
	if resp.GetOverallCode() != pb.RateLimitResponse_OVER_LIMIT || !strings.Contains(body, want) {
		t.Errorf("fresh address on a spent overflow counter: %s, body %s, want %s", brief(resp), body, want)
	}
}

// TestAttackPacingAnswersAreTrue (issue 15 item 9): a client that paces
// itself by the answer's fields is never misled. A limit of 0 requests
// (a descriptor's own, or a rule file's) can never pass, so it promises no
// retry (no Retry-After), and its RateLimit-Policy's w is its period, not
// 1 second; a hit over what a limit allows at once gets no Retry-After
// either, and its t is when the window resets, as duration_until_reset
// says, not 0.
func TestAttackPacingAnswersAreTrue(t *testing.T) {
	h := start(t, rulesFrom(t, rlRules, "domain: t\ndescriptors:\n  - {key: tenant, rate_limit: {unit: minute, requests_per_unit: 3}}\n"))
	h.clk.Advance(20 * time.Second)
	zero := func(unit typev3.RateLimitUnit) *rlv3.RateLimitDescriptor {
		d := desc("k=v")
		d.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 0, Unit: unit}
		return d
	}
	huge := desc("tenant=acme")
	huge.HitsAddend = wrapperspb.UInt64(4294967295)
	// epoch is 2026-01-01T00:00:00Z: of the 365-day windows since 1970,
	// the one holding it runs from day 20,440 (2025-12-18) to day 20,805.
	yearLeft := int64(20805*24*3600) - epoch.Unix() - 20
	for _, tc := range []struct {
		name  string
		req   *pb.RateLimitRequest
		brief string
		want  map[string]string // the headers; "" for none
	}{
		{"override of 0 an hour", request("rl", zero(typev3.RateLimitUnit_HOUR)), "OVER_LIMIT OVER_LIMIT/0/3580s",
			map[string]string{"RateLimit-Policy": `"(override)";q=0;w=3600`, "RateLimit": `"(override)";r=0;t=3580`}},
		{"override of 0 a year", request("rl", zero(typev3.RateLimitUnit_YEAR)), "OVER_LIMIT OVER_LIMIT/0/" + itoa(yearLeft) + "s",
			map[string]string{"RateLimit-Policy": `"(override)";q=0;w=31536000`, "RateLimit": `"(override)";r=0;t=` + itoa(yearLeft)}},
		{"rule file's 0 an hour", request("rl", desc("banned=x")), "OVER_LIMIT OVER_LIMIT/0/3580s",
			map[string]string{"RateLimit-Policy": `"banned";q=0;w=3600`, "RateLimit": `"banned";r=0;t=3580`}},
		{"hits_addend 4294967295 over 3", request("t", huge), "OVER_LIMIT OVER_LIMIT/3/40s",
			map[string]string{"RateLimit-Policy": `"tenant";q=3;w=60`, "RateLimit": `"tenant";r=3;t=40`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.ask(tc.req)
			if got := brief(resp); got != tc.brief {
				t.Errorf("answer %q, want %q", got, tc.brief)
			}
			if got := headerMap(resp); !maps.Equal(got, tc.want) {
				t.Errorf("headers %q, want %q (no Retry-After)", got, tc.want)
			}
		})
	}
}
