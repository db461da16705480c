package httplimit_test

import (
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store/memory"
	"github.com/sluice-rl/sluice/throttle"
)

// headerSink is a ResponseWriter that keeps nothing between requests.
type headerSink struct{ h http.Header }

func (w *headerSink) Header() http.Header         { return w.h }
func (w *headerSink) Write(b []byte) (int, error) { return len(b), nil }
func (w *headerSink) WriteHeader(int)             {}

// benchDecide runs one request through a Limiter for p again and again, on
// a fake clock and a memory store.
func benchDecide(b *testing.B, p policy.Policy, r *http.Request, opt ...func(*httplimit.Options)) {
	clk := clock.NewFake(epoch)
	mem := memory.New(memory.Options{Clock: clk})
	b.Cleanup(func() { _ = mem.Close() })
	opts := httplimit.Options{Policy: compile(b, p), Store: mem, Clock: clk}
	for _, o := range opt {
		o(&opts)
	}
	lim, err := httplimit.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	h := lim.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	w := &headerSink{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, r)
	}
}

func benchPolicy(rate policy.Rate) policy.Policy {
	return policy.Policy{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		Clients: policy.Clients{Unknown: policy.UnknownAnonymous, List: []policy.Client{
			{ID: "partner-a", Keys: []string{"key-a"}},
		}},
		Rules: []policy.Rule{
			{Name: "claims", Match: policy.Match{Path: "/claims"}, Rate: rate},
			{Name: "per-ip", Key: policy.KeySpec{Kind: policy.KeyIP}, Rate: rate},
		},
	}
}

func benchRequest(remote string, h http.Header) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, "http://sluice.test/claims/7", nil)
	r.RemoteAddr, r.Header = remote, h
	return r
}

// BenchmarkDecidePass: a known client passes two rules.
func BenchmarkDecidePass(b *testing.B) {
	benchDecide(b, benchPolicy(policy.Rate{N: 1e9, Period: time.Second}),
		benchRequest("192.0.2.1:1234", http.Header{"X-Api-Key": {"key-a"}}))
}

// BenchmarkDecideRecorded: as BenchmarkDecidePass, with the response
// recorded and settled after the handler (Options.OnResponse).
func BenchmarkDecideRecorded(b *testing.B) {
	benchDecide(b, benchPolicy(policy.Rate{N: 1e9, Period: time.Second}),
		benchRequest("192.0.2.1:1234", http.Header{"X-Api-Key": {"key-a"}}),
		func(o *httplimit.Options) { o.OnResponse = func(*http.Request, *httplimit.Response) {} })
}

// BenchmarkDecideThrottled: as BenchmarkDecidePass, then a slot of a
// Throttle (protect) taken and given back after the handler.
func BenchmarkDecideThrottled(b *testing.B) {
	thr, err := throttle.New(throttle.Config{MaxInFlight: 1000})
	if err != nil {
		b.Fatal(err)
	}
	benchDecide(b, benchPolicy(policy.Rate{N: 1e9, Period: time.Second}),
		benchRequest("192.0.2.1:1234", http.Header{"X-Api-Key": {"key-a"}}),
		func(o *httplimit.Options) { o.Throttle = thr })
}

// BenchmarkDecideProxied: an anonymous caller behind two trusted proxies
// passes two rules.
func BenchmarkDecideProxied(b *testing.B) {
	benchDecide(b, benchPolicy(policy.Rate{N: 1e9, Period: time.Second}),
		benchRequest("10.0.0.1:1234", http.Header{"X-Forwarded-For": {"198.51.100.7, 203.0.113.9, 10.0.0.2"}}))
}

// BenchmarkDecideLimited: a known client over its limit gets a 429.
func BenchmarkDecideLimited(b *testing.B) {
	benchDecide(b, benchPolicy(policy.Rate{N: 1, Period: 24 * time.Hour}),
		benchRequest("192.0.2.1:1234", http.Header{"X-Api-Key": {"key-a"}}))
}

// BenchmarkDecideHeader: as BenchmarkDecidePass, with a third rule that
// counts by a header the policy spells in lower case (key: header:x-tenant).
func BenchmarkDecideHeader(b *testing.B) {
	p := benchPolicy(policy.Rate{N: 1e9, Period: time.Second})
	p.Rules = append(p.Rules, policy.Rule{Name: "per-tenant", Key: policy.KeySpec{Kind: policy.KeyHeader, Header: "x-tenant"},
		Rate: policy.Rate{N: 1e9, Period: time.Second}})
	benchDecide(b, p, benchRequest("192.0.2.1:1234", http.Header{"X-Api-Key": {"key-a"}, "X-Tenant": {"acme"}}))
}

// BenchmarkDecideCostHeader: as BenchmarkDecidePass, the claims rule
// settled after the response by a cost header the policy spells in lower
// case (cost_header: x-cost) and the handler writes.
func BenchmarkDecideCostHeader(b *testing.B) {
	p := benchPolicy(policy.Rate{N: 1e9, Period: time.Second})
	p.Rules[0].CostHeader = "x-cost"
	clk := clock.NewFake(epoch)
	mem := memory.New(memory.Options{Clock: clk})
	b.Cleanup(func() { _ = mem.Close() })
	lim, err := httplimit.New(httplimit.Options{Policy: compile(b, p), Store: mem, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	cost := []string{"1"}
	h := lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Header()["X-Cost"] = cost }))
	w := &headerSink{h: http.Header{}}
	r := benchRequest("192.0.2.1:1234", http.Header{"X-Api-Key": {"key-a"}})
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, r)
	}
}
