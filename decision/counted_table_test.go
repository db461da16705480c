package decision_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// The counted tables: what a refusal's problem body, its header fields
// and the Report's Counted say a request counted as: the client id, the
// address, a header's value, all callers together, never an access key
// or a secret-looking value. httplimit/counted_test.go checks the same
// through net/http.

// tenants is one rule counting by header X-Tenant at n a minute, with
// partner-a listed (key key-a) and unknown callers admitted.
func tenants(n int64, missing policy.MissingHeader, mode policy.Mode) policy.Policy {
	return policy.Policy{
		Clients: policy.Clients{Unknown: policy.UnknownAnonymous, List: []policy.Client{{ID: "partner-a", Keys: []string{"key-a"}}}},
		Rules: []policy.Rule{{Name: "tenants", Key: policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant", Missing: missing},
			Algorithm: limiter.FixedWindow, Rate: rate(n, time.Minute), Mode: mode}},
	}
}

// tenant is a call to /x from peer with X-Tenant value ("-": none).
func tenant(peer, value string) call {
	c := call{path: "/x", peer: peer}
	if value != "-" {
		c.h = hdr{"X-Tenant": {value}}
	}
	return c
}

// TestMissingHeaderTable: a request without the header is counted as
// missing_header says: on one shared counter, by the caller's address,
// or not at all, refused with 400.
func TestMissingHeaderTable(t *testing.T) {
	const a, b = "192.0.2.1:1", "192.0.2.2:1"
	type step struct {
		c      call
		status int
		detail string // how the detail starts
	}
	for _, tc := range []struct {
		missing policy.MissingHeader
		steps   []step
	}{
		{policy.MissingShared, []step{
			{tenant(a, "-"), 0, ""},
			{tenant(b, "-"), 429, "requests without header X-Tenant exceeded 1 request per 1m (rule tenants); retry in 60s"},
			{tenant(b, ""), 429, "requests without header X-Tenant exceeded"}, // empty is missing
			{tenant(b, "acme"), 0, ""},
		}},
		{policy.MissingIP, []step{
			{tenant(a, "-"), 0, ""},
			{tenant(b, "-"), 0, ""},
			{tenant(a, ""), 429, "192.0.2.1 (without header X-Tenant) exceeded 1 request per 1m (rule tenants)"},
			{tenant(a, "acme"), 0, ""},
			{tenant(b, "acme"), 429, `header X-Tenant "acme" exceeded 1 request per 1m (rule tenants)`},
		}},
		{policy.MissingReject, []step{
			{tenant(a, "-"), 400, "missing header X-Tenant, by which rule tenants counts requests"},
			{tenant(a, ""), 400, "missing header X-Tenant"},
			{tenant(a, "acme"), 0, ""},
			{tenant(a, "acme"), 429, `header X-Tenant "acme" exceeded`}, // the 400s spent nothing of it
		}},
	} {
		t.Run(tc.missing.String(), func(t *testing.T) {
			r := newRig(t, tenants(1, tc.missing, policy.Enforce))
			for i, st := range tc.steps {
				s := r.do(st.c)
				want(t, s, st.status, "step "+string(rune('0'+i)))
				if !strings.HasPrefix(s.detail(), st.detail) {
					t.Errorf("step %d: detail %q, want it to start %q", i, s.detail(), st.detail)
				}
				if st.status != 0 && s.rep.Status != st.status {
					t.Errorf("step %d: report status %d, want %d", i, s.rep.Status, st.status)
				}
				if st.status == 429 && !strings.HasPrefix(s.detail(), s.rep.Counted+" ") {
					t.Errorf("step %d: report Counted %q, detail %q", i, s.rep.Counted, s.detail())
				}
			}
		})
	}
}

// TestMissingHeaderRejectInShadowTable: a shadow rule refuses nothing: a
// request without its header passes, reported shadow_limited.
func TestMissingHeaderRejectInShadowTable(t *testing.T) {
	r := newRig(t, tenants(1, policy.MissingReject, policy.Shadow))
	for range 3 {
		s := r.do(tenant("192.0.2.1:1", "-"))
		want(t, s, 0, "a shadow rule's request")
		if o := s.rule(t, "tenants").Outcome; o != decision.ShadowLimited {
			t.Errorf("outcome %v, want shadow_limited", o)
		}
	}
}

// TestCountedNeverASecretTable: a 429's detail and the Report's Counted
// name what the rule counted, never an access key or a secret-looking
// value, nor a byte of a long or binary value, and no header field the
// refusal sets shows it either.
func TestCountedNeverASecretTable(t *testing.T) {
	long := strings.Repeat("t", 65)
	for _, tc := range []struct {
		name   string // the header the rule counts by
		value  string
		want   string // how the detail starts
		hidden string // what must not appear: "" the value, "-" nothing
	}{
		{"X-Tenant", "acme", `header X-Tenant "acme" exceeded`, "-"},
		{"X-Tenant", `ac"me\`, `header X-Tenant "ac\"me\\" exceeded`, "-"},
		{"X-Tenant", "key-a", "header X-Tenant (value withheld) exceeded", ""},      // a listed access key
		{"X-Api-Key", "whatever", "header X-Api-Key (value withheld) exceeded", ""}, // the key header itself
		{"X-Api-Key", "key-zz", "header X-Api-Key (value withheld) exceeded", ""},
		{"X-Auth-Token", "t0k3n", "header X-Auth-Token (value withheld) exceeded", ""},
		{"Cookie", "sid=1", "header Cookie (value withheld) exceeded", ""},
		{"X-Tenant", "Bearer abc.def", "header X-Tenant (value withheld) exceeded", ""},
		{"X-Tenant", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln", "header X-Tenant (value withheld) exceeded", ""},
		{"X-Tenant", long, "header X-Tenant sha256:", long[:20]},
		{"X-Tenant", "acme\nlevel=ERROR msg=forged", "header X-Tenant sha256:", "forged"},
		{"X-Tenant", "caf\xc3\xa9\x00", "header X-Tenant sha256:", "caf"},
	} {
		t.Run(tc.name+" "+tc.value, func(t *testing.T) {
			p := tenants(1, policy.MissingShared, policy.Enforce)
			p.Rules[0].Key.Header = tc.name
			r := newRig(t, p)
			c := call{path: "/x", h: hdr{tc.name: {tc.value}}}
			want(t, r.do(c), 0, "first")
			s := r.do(c)
			want(t, s, 429, "second")
			d := s.detail()
			if !strings.HasPrefix(d, tc.want) || !strings.HasPrefix(d, s.rep.Counted+" exceeded") {
				t.Errorf("detail %q, report Counted %q; want the detail to start %q", d, s.rep.Counted, tc.want)
			}
			hidden := tc.hidden
			if hidden == "" {
				hidden = tc.value
			}
			if hidden == "-" {
				return
			}
			if strings.Contains(d, hidden) || strings.Contains(s.rep.Counted, hidden) {
				t.Errorf("detail %q, Counted %q show %q", d, s.rep.Counted, hidden)
			}
			for name, v := range s.fields {
				if strings.Contains(v, hidden) {
					t.Errorf("field %s: %q shows %q", name, v, hidden)
				}
			}
		})
	}
}

// TestCountedPerKeyKindTable: every key kind names what it counted, in
// the detail and in RateLimit-Policy and RateLimit under the rule's name.
func TestCountedPerKeyKindTable(t *testing.T) {
	for _, tc := range []struct {
		key  policy.KeySpec
		want string
	}{
		{policy.KeySpec{Kind: policy.KeyClient}, "partner-a exceeded"},
		{policy.KeySpec{Kind: policy.KeyIP}, "192.0.2.1 exceeded"},
		{policy.KeySpec{Kind: policy.KeyGlobal}, "all callers together exceeded"},
	} {
		p := tenants(1, policy.MissingShared, policy.Enforce)
		p.Rules[0].Key = tc.key
		r := newRig(t, p)
		want(t, r.do(call{path: "/x", key: "key-a"}), 0, "first")
		s := r.do(call{path: "/x", key: "key-a"})
		want(t, s, 429, "second")
		if !strings.HasPrefix(s.detail(), tc.want) {
			t.Errorf("%v: detail %q, want it to start %q", tc.key, s.detail(), tc.want)
		}
		if got := s.fields["Ratelimit-Policy"]; got != `"tenants";q=1;w=60` {
			t.Errorf("%v: RateLimit-Policy %q", tc.key, got)
		}
		if got := s.fields["Ratelimit"]; got != `"tenants";r=0;t=60` {
			t.Errorf("%v: RateLimit %q", tc.key, got)
		}
	}
}
