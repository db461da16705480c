package rls

import (
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// rlRules has each feature of envoyproxy/ratelimit's rule files.
const rlRules = `
domain: rl
descriptors:
  - key: category
    value: account
    rate_limit:
      replaces: [{name: bkthomps}]
      unit: minute
      requests_per_unit: 4
  - key: source_cluster
    value: proxy
    descriptors:
      - key: destination_cluster
        value: mock
        rate_limit: {unit: minute, requests_per_unit: 1}
  - key: foo
    rate_limit: {unit: minute, requests_per_unit: 2}
    descriptors:
      - key: bar
        value: bkthomps
        rate_limit: {name: bkthomps, unit: minute, requests_per_unit: 1}
      - key: baz
        value: shady
        shadow_mode: true
        rate_limit: {unit: minute, requests_per_unit: 1}
      - key: bay
        rate_limit: {unlimited: true}
  - key: path
    value: /api/*
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: user
    value: a*z
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: banned
    rate_limit: {unit: hour, requests_per_unit: 0}
  - key: bucket
    rate_limit: {unit: second, requests_per_unit: 10, algorithm: token_bucket, burst: 2}
`

// step is one request of a table and the answer it must get, as brief
// writes it; advance moves the clock first.
type step struct {
	advance time.Duration
	req     *pb.RateLimitRequest
	want    string
}

func runSteps(t *testing.T, h *harness, steps []step) {
	t.Helper()
	for i, s := range steps {
		h.clk.Advance(s.advance)
		if got := brief(h.ask(s.req)); got != s.want {
			t.Errorf("step %d (%v): got %q, want %q", i, s.req.GetDescriptors(), got, s.want)
		}
	}
}

func TestAnswers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"unknown domain", []step{{0, request("nope", desc("foo=x")), "OK OK"}}},
		{"no rule", []step{{0, request("rl", desc("nothing=here")), "OK OK"}}},
		{"key only, then over", []step{
			{0, request("rl", desc("foo=x")), "OK OK/1/60s"},
			{time.Second, request("rl", desc("foo=x")), "OK OK/0/59s"},
			{0, request("rl", desc("foo=x")), "OVER_LIMIT OVER_LIMIT/0/59s"},
			{0, request("rl", desc("foo=y")), "OK OK/1/59s"}, // each value counts apart
			{59 * time.Second, request("rl", desc("foo=x")), "OK OK/1/60s"},
		}},
		{"nested", []step{
			{0, request("rl", desc("source_cluster=proxy", "destination_cluster=mock")), "OK OK/0/60s"},
			{0, request("rl", desc("source_cluster=proxy", "destination_cluster=mock")), "OVER_LIMIT OVER_LIMIT/0/60s"},
			{0, request("rl", desc("source_cluster=proxy")), "OK OK"}, // no limit at that depth
			{0, request("rl", desc("source_cluster=proxy", "destination_cluster=mock", "x=y")), "OK OK"},
		}},
		{"shadow mode", []step{
			{0, request("rl", desc("foo=x", "baz=shady")), "OK OK/0/60s"},
			{0, request("rl", desc("foo=x", "baz=shady")), "OK OK/0/60s"},
		}},
		{"unlimited", []step{{0, request("rl", desc("foo=x", "bay=any")), "OK OK/unlimited"}}},
		{"replaces", []step{
			{0, request("rl", desc("foo=x", "bar=bkthomps"), desc("category=account")), "OK OK OK/3/60s"},
			{0, request("rl", desc("foo=x", "bar=bkthomps"), desc("category=account")), "OK OK OK/2/60s"},
			{0, request("rl", desc("foo=x", "bar=bkthomps")), "OK OK/0/60s"},
			{0, request("rl", desc("foo=x", "bar=bkthomps")), "OVER_LIMIT OVER_LIMIT/0/60s"},
		}},
		{"share_threshold", []step{
			{0, request("rl", desc("path=/api/a")), "OK OK/1/60s"},
			{0, request("rl", desc("path=/api/b")), "OK OK/0/60s"}, // one count for every /api/ path
			{0, request("rl", desc("path=/api/c")), "OVER_LIMIT OVER_LIMIT/0/60s"},
		}},
		{"middle wildcard", []step{
			{0, request("rl", desc("user=abcz")), "OK OK/0/60s"},
			{0, request("rl", desc("user=abcz")), "OVER_LIMIT OVER_LIMIT/0/60s"},
			{0, request("rl", desc("user=az")), "OK OK/0/60s"},
			{0, request("rl", desc("user=za")), "OK OK"},
		}},
		{"requests_per_unit 0", []step{{0, request("rl", desc("banned=x")), "OVER_LIMIT OVER_LIMIT/0/3600s"}}},
		{"any descriptor over makes the answer over", []step{
			{0, request("rl", desc("source_cluster=proxy", "destination_cluster=mock"), desc("foo=z")), "OK OK/0/60s OK/1/60s"},
			{0, request("rl", desc("source_cluster=proxy", "destination_cluster=mock"), desc("foo=z")), "OVER_LIMIT OVER_LIMIT/0/60s OK/0/60s"},
		}},
		{"token bucket extension", []step{
			{0, request("rl", desc("bucket=a")), "OK OK/1/1s"},
			{0, request("rl", desc("bucket=a")), "OK OK/0/1s"},
			{0, request("rl", desc("bucket=a")), "OVER_LIMIT OVER_LIMIT/0/1s"},
			{100 * time.Millisecond, request("rl", desc("bucket=a")), "OK OK/0/1s"}, // 10/s refills one in 100ms
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runSteps(t, start(t, rulesFrom(t, rlRules)), tc.steps)
		})
	}
}

func TestHitsAddend(t *testing.T) {
	h := start(t, rulesFrom(t, rlRules))
	look := desc("foo=h")
	look.HitsAddend = wrapperspb.UInt64(0)
	three := &pb.RateLimitRequest{Domain: "rl", Descriptors: []*rlv3.RateLimitDescriptor{desc("category=account")}, HitsAddend: 3}
	runSteps(t, h, []step{
		{0, request("rl", look), "OK OK/2/60s"}, // a per-descriptor 0 is a look
		{0, &pb.RateLimitRequest{Domain: "rl", Descriptors: []*rlv3.RateLimitDescriptor{desc("foo=h")}, HitsAddend: 0}, "OK OK/1/60s"}, // 0 means 1
		{0, three, "OK OK/1/60s"},
		{0, three, "OVER_LIMIT OVER_LIMIT/1/60s"}, // a denied hit spends nothing: 1 is left
	})
}

func TestLimitOverride(t *testing.T) {
	h := start(t, rulesFrom(t, rlRules))
	over := func(rpu uint32, unit typev3.RateLimitUnit, entries ...string) *pb.RateLimitRequest {
		d := desc(entries...)
		d.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: rpu, Unit: unit}
		return request("rl", d)
	}
	runSteps(t, h, []step{
		{0, over(1, typev3.RateLimitUnit_SECOND, "anything=at-all"), "OK OK/0/1s"},
		{0, over(1, typev3.RateLimitUnit_SECOND, "anything=at-all"), "OVER_LIMIT OVER_LIMIT/0/1s"},
		{0, over(5, typev3.RateLimitUnit_HOUR, "foo=o"), "OK OK/4/3600s"}, // beats the configured 2/minute
		{0, over(0, typev3.RateLimitUnit_MINUTE, "foo=zero"), "OVER_LIMIT OVER_LIMIT/0/60s"},
	})
	d := desc("x=y")
	d.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_SECOND}
	if got := brief(h.ask(request("unknown", d))); got != "OK OK" {
		t.Errorf("override in an unknown domain: %q, want OK (no limit, as envoyproxy/ratelimit)", got)
	}
	st := h.ask(over(3, typev3.RateLimitUnit_MINUTE, "m=1")).GetStatuses()[0].GetCurrentLimit()
	if st.GetRequestsPerUnit() != 3 || st.GetUnit() != pb.RateLimitResponse_RateLimit_MINUTE {
		t.Errorf("current_limit %v, want 3 per MINUTE", st)
	}
}

func TestResponseHeaders(t *testing.T) {
	h := start(t, rulesFrom(t, rlRules))
	h.clk.Advance(20 * time.Second)
	req := request("rl", desc("foo=x"), desc("source_cluster=proxy", "destination_cluster=mock"), desc("nothing=here"))
	got := headerMap(h.ask(req))
	want := map[string]string{
		"RateLimit-Policy": `"foo";q=2;w=60, "source_cluster_proxy.destination_cluster_mock";q=1;w=60`,
		"RateLimit":        `"foo";r=1;t=40, "source_cluster_proxy.destination_cluster_mock";r=0;t=40`,
	}
	if len(got) != 2 || got["RateLimit-Policy"] != want["RateLimit-Policy"] || got["RateLimit"] != want["RateLimit"] {
		t.Errorf("allowed: got %q, want %q", got, want)
	}
	got = headerMap(h.ask(req))
	if got["Retry-After"] != "40" || got["RateLimit"] != `"foo";r=0;t=40, "source_cluster_proxy.destination_cluster_mock";r=0;t=40` {
		t.Errorf("over: got %q, want Retry-After 40 and both at r=0", got)
	}
	// A shadow_mode descriptor has no item and no Retry-After.
	h.ask(request("rl", desc("foo=s", "baz=shady")))
	if got := headerMap(h.ask(request("rl", desc("foo=s", "baz=shady")))); len(got) != 0 {
		t.Errorf("shadow mode: got headers %q, want none", got)
	}
}

func TestHeaderNameFromConfigIsQuoted(t *testing.T) {
	h := start(t, rulesFrom(t, "domain: q\ndescriptors:\n  - {key: 'a\"b', value: 'c\\d', rate_limit: {unit: second, requests_per_unit: 1}}\n"))
	got := headerMap(h.ask(request("q", desc(`a"b=c\d`))))
	if got["RateLimit"] != `"a_b_c_d";r=0;t=1` {
		t.Errorf("RateLimit %q, want the name's quote and backslash as _", got["RateLimit"])
	}
}

func TestQuotaMode(t *testing.T) {
	rules := rulesFrom(t, `
domain: q
descriptors:
  - {key: a, quota_mode: true, rate_limit: {unit: minute, requests_per_unit: 1}}
  - {key: b, quota_mode: true, rate_limit: {unit: minute, requests_per_unit: 2}}
`)
	runSteps(t, start(t, rules), []step{
		{0, request("q", desc("a=1"), desc("b=1")), "OK OK/0/60s OK/1/60s"},
		{0, request("q", desc("a=1"), desc("b=1")), "OK OVER_LIMIT/0/60s OK/0/60s"}, // one quota left: OK
		{0, request("q", desc("a=1"), desc("b=1")), "OVER_LIMIT OVER_LIMIT/0/60s OVER_LIMIT/0/60s"},
	})
}

func TestStatusesKeepTheRequestOrder(t *testing.T) {
	h := start(t, rulesFrom(t, rlRules))
	resp := h.ask(request("rl", desc("nothing=1"), desc("foo=1"), desc("foo=2", "bay=3"), desc("banned=4")))
	if got := brief(resp); got != "OVER_LIMIT OK OK/1/60s OK/unlimited OVER_LIMIT/0/3600s" {
		t.Errorf("got %q", got)
	}
	if n := strings.Count(headerMap(resp)["RateLimit"], ";r="); n != 2 {
		t.Errorf("RateLimit has %d items, want 2 (foo and banned)", n)
	}
}
