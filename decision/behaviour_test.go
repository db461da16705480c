package decision_test

// The behaviour tables: what a caller sees of sluice's decision, driven
// through the Engine with a request as plain values (hdr, a map, as the
// Headers) on the real memory store and a fake clock. httplimit and the
// gateway test the same behaviour through their transports; these make
// the core fail its own tests when it is broken.

import (
	"context"
	"encoding/json"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store/memory"
)

// rig is an Engine over a memory store on a fake clock, as the tables
// drive it: set is what each request is decided under, settled what
// OnSettle was told.
type rig struct {
	t     *testing.T
	clock *clock.Fake
	mem   *memory.Store
	e     *decision.Engine
	set   decision.Settings

	mu      sync.Mutex
	settled []error
}

// newRig builds a rig for p; opts may change the Options (wrap the Store,
// set a Leaser) before decision.New.
func newRig(t *testing.T, p policy.Policy, opts ...func(*decision.Options)) *rig {
	t.Helper()
	r := &rig{t: t, clock: clock.NewFake(epoch)}
	r.mem = memory.New(memory.Options{Clock: r.clock})
	t.Cleanup(func() { _ = r.mem.Close() })
	o := decision.Options{Store: r.mem, Clock: r.clock,
		OnSettle: func(_ *decision.Request, _ string, err error) {
			r.mu.Lock()
			r.settled = append(r.settled, err)
			r.mu.Unlock()
		}}
	for _, f := range opts {
		f(&o)
	}
	e, err := decision.New(o)
	if err != nil {
		t.Fatal(err)
	}
	r.e, r.set = e, decision.Settings{Policy: compiled(t, p)}
	return r
}

// settleErrors returns how many errors OnSettle was told, and the last.
func (r *rig) settleErrors() (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.settled) == 0 {
		return 0, nil
	}
	return len(r.settled), r.settled[len(r.settled)-1]
}

func compiled(t testing.TB, p policy.Policy) *policy.Compiled {
	t.Helper()
	c, err := policy.Compile(p)
	if err != nil {
		t.Fatalf("policy.Compile: %v", err)
	}
	return c
}

// call is one request; empty fields take defaults: GET /claims from
// 192.0.2.1:1234, key (X-Api-Key) only if set.
type call struct {
	method, path, peer, key string
	host                    string // Request.Host; "" for none
	h                       hdr
}

func (c call) request() decision.Request {
	req := decision.Request{Method: cmpOrStr(c.method, "GET"), Path: cmpOrStr(c.path, "/claims"), Host: c.host}
	if c.peer != "-" {
		req.Peer = netip.MustParseAddrPort(cmpOrStr(c.peer, "192.0.2.1:1234"))
	}
	h := hdr{}
	for k, v := range c.h {
		h[k] = slices.Clone(v)
	}
	if c.key != "" {
		h["X-Api-Key"] = []string{c.key}
	}
	req.Header = h
	return req
}

func cmpOrStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// seen is a Verdict's values and Report, copied before Finish.
type seen struct {
	pass                      bool
	status                    int
	fields                    map[string]string
	body                      map[string]any
	client                    string
	removed                   []string
	method, path, decodedPath string
	addr                      netip.Addr
	rep                       decision.Report // Rules copied; nothing else read after Finish
}

// detail is the problem body's detail, "" when there is none.
func (s seen) detail() string { d, _ := s.body["detail"].(string); return d }

// violated is the problem body's violated-policies.
func (s seen) violated() []string {
	var out []string
	vs, _ := s.body["violated-policies"].([]any)
	for _, v := range vs {
		out = append(out, v.(string))
	}
	return out
}

// outcomes is the Report's outcome per rule name.
func (s seen) outcomes() map[string]decision.Outcome {
	m := map[string]decision.Outcome{}
	for _, r := range s.rep.Rules {
		m[r.Rule] = r.Outcome
	}
	return m
}

// rule is the Report's result of rule name; it fails without one.
func (s seen) rule(t *testing.T, name string) decision.RuleResult {
	t.Helper()
	for _, r := range s.rep.Rules {
		if r.Rule == name {
			return r
		}
	}
	t.Fatalf("no result of rule %s in %+v", name, s.rep.Rules)
	return decision.RuleResult{}
}

// look copies v's values.
func look(t *testing.T, v *decision.Verdict) seen {
	t.Helper()
	s := seen{pass: v.Pass, status: v.Status, fields: map[string]string{}, client: v.Client,
		removed: slices.Sorted(slices.Values(v.Removed)), method: v.Method, path: v.Path, decodedPath: v.DecodedPath,
		addr: v.Addr, rep: v.Report}
	s.rep.Rules = slices.Clone(v.Report.Rules)
	for _, f := range v.Header {
		if _, twice := s.fields[f.Name]; twice && f.Name != decision.UnknownKeyHeader {
			t.Errorf("field %s set twice: %q", f.Name, v.Header)
		}
		s.fields[f.Name] = string(f.Value)
	}
	if v.Body != nil {
		if err := json.Unmarshal(v.Body, &s.body); err != nil {
			t.Fatalf("body %q: %v", v.Body, err)
		}
		if v.Pass || s.body["status"] != float64(v.Status) || s.fields["Content-Type"] != "application/problem+json" {
			t.Errorf("refusal %d: body %q, fields %q", v.Status, v.Body, v.Header)
		}
	}
	return s
}

// do decides c and finishes its Verdict: a refusal, or a 200 the service
// answered.
func (r *rig) do(c call) seen {
	r.t.Helper()
	return r.answered(c, &decision.Response{Passed: true, Status: 200})
}

// answered decides c and, if it passes, finishes it with resp (nil: no
// Response); a refusal is finished with nil.
func (r *rig) answered(c call, resp *decision.Response) seen {
	r.t.Helper()
	v := r.e.Decide(context.Background(), r.set, c.request())
	s := look(r.t, v)
	if !v.Pass {
		resp = nil
	}
	v.Finish(resp)
	return s
}

// hold decides c, which must pass, and returns its Verdict unfinished: it
// holds its leases until the caller finishes it.
func (r *rig) hold(c call) (*decision.Verdict, seen) {
	r.t.Helper()
	v := r.e.Decide(context.Background(), r.set, c.request())
	s := look(r.t, v)
	if !v.Pass {
		v.Finish(nil)
		r.t.Fatalf("%+v: %d %q, want it to pass", c, s.status, s.detail())
	}
	return v, s
}

// want fails unless s passed (status 0) or was refused with status.
func want(t *testing.T, s seen, status int, what string) {
	t.Helper()
	if s.pass != (status == 0) || s.status != status {
		t.Fatalf("%s: pass %v status %d (%q), want status %d", what, s.pass, s.status, s.detail(), status)
	}
}

// items reads a RateLimit or RateLimit-Policy field as the Engine writes
// it: each item's name and integer parameters.
func items(t *testing.T, field string) map[string]map[string]int64 {
	t.Helper()
	m := map[string]map[string]int64{}
	if field == "" {
		return m
	}
	for it := range strings.SplitSeq(field, ", ") {
		parts := strings.Split(it, ";")
		name, err := strconv.Unquote(parts[0])
		if err != nil {
			t.Fatalf("item %q of %q: %v", it, field, err)
		}
		m[name] = map[string]int64{}
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(p, "=")
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				m[name][k] = n
			}
		}
	}
	return m
}

// remaining is rule name's r in s's RateLimit, -1 when it has no item.
func remaining(t *testing.T, s seen, name string) int64 {
	t.Helper()
	it, ok := items(t, s.fields["Ratelimit"])[name]
	if !ok {
		return -1
	}
	return it["r"]
}

func rate(n int64, period time.Duration) policy.Rate { return policy.Rate{N: n, Period: period} }

// partners is DESIGN.md's claims story in small numbers: claims (GET
// /claims, per client) allows 3 a minute, plan large 5, assessor-c's own
// 4 beats its plan large; unknown keys are rejected.
func partners() policy.Policy {
	return policy.Policy{
		Clients: policy.Clients{List: []policy.Client{
			{ID: "partner-a", Keys: []string{"key-a"}, Plan: "standard"},
			{ID: "partner-b", Keys: []string{"key-b"}, Plan: "large"},
			{ID: "assessor-c", Keys: []string{"key-c"}, Plan: "large", Limits: map[string]policy.Rate{"claims": rate(4, time.Minute)}},
		}},
		Plans: map[string]policy.Plan{
			"standard": {},
			"large":    {Limits: map[string]policy.Rate{"claims": rate(5, time.Minute)}},
		},
		Rules: []policy.Rule{{Name: "claims", Match: policy.Match{Path: "/claims", Methods: []string{"GET"}},
			Algorithm: limiter.FixedWindow, Rate: rate(3, time.Minute)}},
	}
}

// byIP is one rule counting every path by the caller's address, n a
// minute.
func byIP(n int64) policy.Policy {
	return policy.Policy{Rules: []policy.Rule{{Name: "per-ip", Key: policy.KeySpec{Kind: policy.KeyIP},
		Algorithm: limiter.FixedWindow, Rate: rate(n, time.Minute)}}}
}

// stores are the two ways the Engine has several rules decided all or
// nothing: by the store itself (the memory store is a
// store.Store.DecideAll), and by store.LookThenSpend over a store that is
// only a store.Store (batchStore).
var stores = map[string]func(*decision.Options){
	"all_or_nothing":  func(*decision.Options) {},
	"look_then_spend": func(o *decision.Options) { o.Store = batchStore{o.Store} },
}
