package httplimit_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// tenants is one rule counting by header X-Tenant at n per minute, with
// partner-a listed (key key-a) and unknown callers admitted.
func tenants(n int64, missing policy.MissingHeader, mode policy.Mode) policy.Policy {
	return policy.Policy{
		Clients: policy.Clients{Unknown: policy.UnknownAnonymous, List: []policy.Client{{ID: "partner-a", Keys: []string{"key-a"}}}},
		Rules: []policy.Rule{{Name: "tenants", Key: policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant", Missing: missing},
			Algorithm: limiter.FixedWindow, Rate: rate(n, time.Minute), Mode: mode}},
	}
}

func tenant(remote, value string) req {
	q := req{path: "/x", remote: remote}
	if value != "-" {
		q.header = http.Header{"X-Tenant": {value}}
	}
	return q
}

// A header:NAME rule counts a request without the header as its
// missing_header says: on one shared counter (the default), by the
// caller's address, or not at all, refusing it with 400.
func TestMissingHeader(t *testing.T) {
	const a, b = "192.0.2.1:1", "192.0.2.2:1"
	type step struct {
		q      req
		status int
		detail string
	}
	cases := []struct {
		missing policy.MissingHeader
		steps   []step
	}{
		{policy.MissingShared, []step{
			{tenant(a, "-"), 200, ""},
			{tenant(b, "-"), 429, "requests without header X-Tenant exceeded 1 request per 1m (rule tenants); retry in 60s"},
			{tenant(b, ""), 429, "requests without header X-Tenant exceeded"}, // empty is missing
			{tenant(b, "acme"), 200, ""},
		}},
		{policy.MissingIP, []step{
			{tenant(a, "-"), 200, ""},
			{tenant(b, "-"), 200, ""},
			{tenant(a, ""), 429, "192.0.2.1 (without header X-Tenant) exceeded 1 request per 1m (rule tenants)"},
			{tenant(a, "acme"), 200, ""},
			{tenant(b, "acme"), 429, `header X-Tenant "acme" exceeded 1 request per 1m (rule tenants)`},
		}},
		{policy.MissingReject, []step{
			{tenant(a, "-"), 400, "missing header X-Tenant, by which rule tenants counts requests"},
			{tenant(a, ""), 400, "missing header X-Tenant"},
			{tenant(a, "acme"), 200, ""},
		}},
	}
	for _, c := range cases {
		t.Run(c.missing.String(), func(t *testing.T) {
			h := newHarness(t, tenants(1, c.missing, policy.Enforce))
			for i, s := range c.steps {
				calls, _ := h.store.stats()
				served := h.servedCount()
				w := h.do(s.q)
				if s.status == 200 {
					wantStatus(t, w, 200, fmt.Sprintf("step %d", i))
					continue
				}
				if p := readProblem(t, w, s.status); !strings.HasPrefix(p.Detail, s.detail) {
					t.Errorf("step %d: detail %q, want it to start %q", i, p.Detail, s.detail)
				}
				if s.status == 400 {
					if after, _ := h.store.stats(); after != calls || h.servedCount() != served {
						t.Errorf("step %d: refused for a missing header, yet counted or served", i)
					}
					if rep := h.lastReport(); rep.Status != 400 {
						t.Errorf("step %d: report status %d, want 400", i, rep.Status)
					}
				}
			}
		})
	}
}

// A shadow rule refuses nothing: a request without its header passes,
// reported shadow_limited and counted nowhere.
func TestMissingHeaderRejectInShadow(t *testing.T) {
	h := newHarness(t, tenants(1, policy.MissingReject, policy.Shadow))
	for i := range 3 {
		wantStatus(t, h.do(tenant("192.0.2.1:1", "-")), 200, fmt.Sprintf("request %d", i))
		if got := outcomes(h.lastReport().Report)["tenants"]; got != httplimit.ShadowLimited {
			t.Errorf("request %d: outcome %v, want shadow_limited", i, got)
		}
	}
	if calls, _ := h.store.stats(); calls != 0 {
		t.Errorf("the store was asked %d times, want none", calls)
	}
}

// A 429's detail, and the Report's Counted that the gateway logs, name
// what the rule counted, never an access key or a secret-looking value,
// and never a byte of a long or binary value.
func TestLimitedDetailNamesWhatWasCounted(t *testing.T) {
	long := strings.Repeat("t", 65)
	cases := []struct {
		name   string // the header the rule counts by
		value  string
		want   string // how the detail starts
		hidden string // what must not appear: "" the value, "-" nothing
	}{
		{"X-Tenant", "acme", `header X-Tenant "acme" exceeded`, "-"},
		{"X-Tenant", `ac"me\`, `header X-Tenant "ac\"me\\" exceeded`, "-"},
		{"X-Tenant", "key-a", "header X-Tenant (value withheld) exceeded", ""},      // a listed access key
		{"X-API-Key", "whatever", "header X-API-Key (value withheld) exceeded", ""}, // the key header itself
		{"X-Api-Key", "key-zz", "header X-Api-Key (value withheld) exceeded", ""},
		{"X-Auth-Token", "t0k3n", "header X-Auth-Token (value withheld) exceeded", ""},
		{"Cookie", "sid=1", "header Cookie (value withheld) exceeded", ""},
		{"X-Tenant", "Bearer abc.def", "header X-Tenant (value withheld) exceeded", ""},
		{"X-Tenant", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln", "header X-Tenant (value withheld) exceeded", ""},
		{"X-Tenant", long, "header X-Tenant sha256:", long[:20]},
		{"X-Tenant", "acme\nlevel=ERROR msg=forged", "header X-Tenant sha256:", "forged"},
		{"X-Tenant", "caf\xc3\xa9\x00", "header X-Tenant sha256:", "caf"},
	}
	for _, c := range cases {
		t.Run(c.name+" "+c.value, func(t *testing.T) {
			p := tenants(1, policy.MissingShared, policy.Enforce)
			p.Rules[0].Key.Header = c.name
			h := newHarness(t, p)
			q := req{path: "/x", header: http.Header{http.CanonicalHeaderKey(c.name): {c.value}}}
			wantStatus(t, h.do(q), 200, "first")
			d := readProblem(t, h.do(q), 429).Detail
			counted := h.lastReport().Counted
			if !strings.HasPrefix(d, c.want) || !strings.HasPrefix(d, counted+" exceeded") {
				t.Errorf("detail %q, report Counted %q; want the detail to start %q", d, counted, c.want)
			}
			hidden := c.hidden
			if hidden == "" {
				hidden = c.value
			}
			if hidden != "-" && strings.Contains(d, hidden) {
				t.Errorf("detail %q shows %q", d, hidden)
			}
		})
	}
}

// Every key kind names what it counted: the client id, the address (also
// for a listed client on an ip rule), all callers together.
func TestLimitedDetailPerKeyKind(t *testing.T) {
	for _, c := range []struct {
		key  policy.KeySpec
		want string
	}{
		{policy.KeySpec{Kind: policy.KeyClient}, "partner-a exceeded"},
		{policy.KeySpec{Kind: policy.KeyIP}, "192.0.2.1 exceeded"},
		{policy.KeySpec{Kind: policy.KeyGlobal}, "all callers together exceeded"},
	} {
		p := tenants(1, policy.MissingShared, policy.Enforce)
		p.Rules[0].Key = c.key
		h := newHarness(t, p)
		wantStatus(t, h.do(req{path: "/x", key: "key-a"}), 200, "first")
		if d := readProblem(t, h.do(req{path: "/x", key: "key-a"}), 429).Detail; !strings.HasPrefix(d, c.want) {
			t.Errorf("%v: detail %q, want it to start %q", c.key, d, c.want)
		}
	}
}
