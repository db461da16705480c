package rls

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store/memory"
)

// policyText is a gateway policy: one file for the gateway, /check and
// Envoy's calls of the domain "sluice".
const policyText = `
listen: 127.0.0.1:8080
upstream: http://127.0.0.1:9000
clients:
  unknown: anonymous
  list:
    - {id: partner-a, keys: [key-a]}
rules:
  - {name: claims, match: {path: /claims, methods: [GET]}, key: client, rate: 2/m}
  - {name: public, match: {path: /public}, key: ip, rate: 1/m}
`

// startPolicy serves rlRules and, for the domain "sluice", policyText
// with ovs in force.
func startPolicy(t *testing.T, ovs ...policy.Override) *harness {
	t.Helper()
	return startPolicyText(t, policyText, ovs...)
}

// startPolicyText is startPolicy with the policy text.
func startPolicyText(t *testing.T, text string, ovs ...policy.Override) *harness {
	t.Helper()
	f, err := config.Parse("t.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	pol, errs := f.Compiled.WithOverrides(ovs)
	if len(errs) > 0 {
		t.Fatal(errs[0].Err)
	}
	clk := clock.NewFake(epoch)
	st := memory.New(memory.Options{Clock: clk})
	e, err := decision.New(decision.Options{Store: st, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	decide := func(ctx context.Context, req decision.Request) *decision.Verdict {
		return e.Decide(ctx, decision.Settings{Policy: pol}, req)
	}
	return startWith(t, rulesFrom(t, rlRules), st, clk, Options{Decide: decide})
}

func TestPolicyDomain(t *testing.T) {
	h := startPolicy(t)
	claims := request("sluice", desc("remote_address=10.1.2.3", ":method=GET", ":path=/claims/7?full=1"), desc("header:x-api-key=key-a"))
	for i := range 2 {
		resp := h.ask(claims)
		if got := brief(resp); got != "OK OK OK" {
			t.Fatalf("call %d: %q, want OK", i, got)
		}
		if hs := resp.GetRequestHeadersToAdd(); len(hs) != 1 || hs[0].GetKey() != "X-Sluice-Client" || hs[0].GetValue() != "partner-a" {
			t.Errorf("call %d: request headers %v, want X-Sluice-Client: partner-a", i, hs)
		}
		if got := headerMap(resp)["Ratelimit-Policy"]; got != `"claims";q=2;w=60` {
			t.Errorf("call %d: RateLimit-Policy %q", i, got)
		}
	}
	resp := h.ask(claims)
	hm := headerMap(resp)
	if resp.GetOverallCode() != pb.RateLimitResponse_OVER_LIMIT || hm["Retry-After"] == "" || hm["Content-Type"] != "application/problem+json" ||
		!strings.Contains(string(resp.GetRawBody()), `"violated-policies":["claims"]`) {
		t.Errorf("over: %q, headers %q, body %s", brief(resp), hm, resp.GetRawBody())
	}
	// The same client from another address is the same counter; the ip
	// rule counts by the address Envoy sends.
	if got := brief(h.ask(request("sluice", desc("remote_address=10.9.9.9", ":path=/claims/1", "header:X-API-Key=key-a")))); got != "OVER_LIMIT OVER_LIMIT" {
		t.Errorf("the client from another address: %q, want OVER_LIMIT", got)
	}
	public := request("sluice", desc("remote_address=192.0.2.1", "path=/public"))
	if a, b := brief(h.ask(public)), brief(h.ask(public)); a != "OK OK" || b != "OVER_LIMIT OVER_LIMIT" {
		t.Errorf("public by address: %q then %q", a, b)
	}
	if got := brief(h.ask(request("sluice", desc("remote_address=192.0.2.2", "path=/public")))); got != "OK OK" {
		t.Errorf("another address: %q, want OK", got)
	}
	// Rule files' domains are theirs: the policy never decides them.
	if got := brief(h.ask(request("rl", desc("foo=x")))); got != "OK OK/1/60s" {
		t.Errorf("a rule file's domain: %q", got)
	}
}

// A blocked address is OVER_LIMIT, as every refusal of the policy
// domain is (Envoy answers its rate_limited_status), with the 403's
// problem body; another address is OK.
func TestPolicyDomainBlocked(t *testing.T) {
	h := startPolicy(t, policy.Override{Addr: netip.MustParsePrefix("192.0.2.0/24"), Block: true})
	resp := h.ask(request("sluice", desc("remote_address=192.0.2.1", "path=/public")))
	if resp.GetOverallCode() != pb.RateLimitResponse_OVER_LIMIT ||
		!strings.Contains(string(resp.GetRawBody()), `"status":403,"detail":"addresses in 192.0.2.0/24 are blocked until an operator removes the block"`) {
		t.Errorf("blocked: %q, body %s", brief(resp), resp.GetRawBody())
	}
	if got := brief(h.ask(request("sluice", desc("remote_address=198.51.100.1", "path=/public")))); got != "OK OK" {
		t.Errorf("another address: %q, want OK", got)
	}
}

func TestPolicyDomainBadInput(t *testing.T) {
	h := startPolicy(t)
	for _, tc := range []struct {
		req *pb.RateLimitRequest
		msg string
	}{
		{request("sluice", desc("remote_address=not-an-ip")), `rls: remote_address "not-an-ip" is not an IP address`},
		{request("sluice", desc(":path=claims")), `rls: :path "claims" is not a path`},
		{request("sluice"), `rls: no descriptors`},
	} {
		_, err := h.call(tc.req)
		if st, _ := status.FromError(err); st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), tc.msg) {
			t.Errorf("got %v, want InvalidArgument %q", err, tc.msg)
		}
	}
	// All counted as the policy domain's, none as an unknown domain's.
	if got := testutil.ToFloat64(h.srv.metrics.requests.WithLabelValues("sluice", "invalid")); got != 3 {
		t.Errorf("requests{sluice,invalid} = %v, want 3", got)
	}
}

// TestPolicyDomainManyEntries: a raw call of the policy domain filled to
// its 1 MiB with header entries, each of another name, is answered well
// within the client's 10 s deadline (names made unique in time quadratic
// in their number once took longer than that).
func TestPolicyDomainManyEntries(t *testing.T) {
	h := startPolicy(t)
	d := desc("remote_address=10.1.2.3", ":path=/claims")
	for i := range 60000 {
		d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: fmt.Sprintf("header:h%05d", i)})
	}
	if got := brief(h.ask(request("sluice", d))); got != "OK OK" {
		t.Errorf("got %q, want OK", got)
	}
}

// TestPolicyDomainRepeatedEntries: the same header entry in two
// descriptors (an action repeated in two of Envoy's rate_limits) is one
// field; two different values are still a key sent twice.
func TestPolicyDomainRepeatedEntries(t *testing.T) {
	h := startPolicy(t)
	resp := h.ask(request("sluice", desc("remote_address=10.1.2.3", ":path=/claims", "header:x-api-key=key-a"),
		desc("remote_address=10.1.2.3", "header:X-API-Key=key-a")))
	if hs := resp.GetRequestHeadersToAdd(); brief(resp) != "OK OK OK" || len(hs) != 1 || hs[0].GetValue() != "partner-a" {
		t.Errorf("a repeated entry: %q, request headers %v, want OK for partner-a", brief(resp), hs)
	}
	resp = h.ask(request("sluice", desc("remote_address=10.1.2.3", ":path=/claims", "header:x-api-key=key-a"),
		desc("header:x-api-key=key-b")))
	if brief(resp) != "OVER_LIMIT OVER_LIMIT OVER_LIMIT" || !strings.Contains(string(resp.GetRawBody()), `"status":400`) {
		t.Errorf("two keys: %q %s, want OVER_LIMIT with the gateway's 400", brief(resp), resp.GetRawBody())
	}
}
