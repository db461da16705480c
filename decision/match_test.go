package decision_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// hosted is partners' claims rule for api.example.com alone, and a rule
// of 1 request a minute for requests with X-Env: prod.
func hosted() policy.Policy {
	p := partners()
	p.Rules[0].Match.Host = "api.example.com"
	p.Rules = append(p.Rules, policy.Rule{Name: "prod", Match: policy.Match{Headers: []policy.HeaderMatch{{Name: "X-Env", Value: "prod"}}},
		Algorithm: limiter.FixedWindow, Rate: rate(1, time.Minute)})
	return p
}

// Every spelling of the host counts on the rule for it; the Verdict
// carries the host as matched.
func TestSpellingsOfHosts(t *testing.T) {
	r := newRig(t, hosted())
	for range 3 {
		want(t, r.do(call{host: "api.example.com", key: "key-a"}), 0, "GET api.example.com/claims")
	}
	for _, h := range []string{"API.EXAMPLE.COM", "api.example.com.", "Api.Example.Com.:8443", "api.example.com:80"} {
		want(t, r.do(call{host: h, key: "key-a"}), 429, "GET /claims for "+h)
	}
	want(t, r.do(call{host: "other.example.com", key: "key-a"}), 0, "GET /claims for another host")
}

// A host with no one reading is refused, 400, before anything is
// counted; so is a request without a host while rules match on it. A
// policy that matches no host reads none.
func TestHostsRefused(t *testing.T) {
	r := newRig(t, hosted())
	for _, h := range []string{"", "api..example.com", "api.example.com:http", "a b", "[::1", "api%2eexample.com"} {
		s := r.do(call{host: h, key: "key-a"})
		want(t, s, 400, "GET /claims for "+h)
		if !strings.HasPrefix(s.detail(), "the request's host cannot be read one way only: it has ") || len(s.rep.Rules) != 0 {
			t.Errorf("host %q: detail %q, rules %+v", h, s.detail(), s.rep.Rules)
		}
	}
	if n := r.mem.Len(); n != 0 {
		t.Errorf("%d counters, want none", n)
	}
	plain := newRig(t, partners())
	for _, h := range []string{"", "api..example.com", "a b"} {
		want(t, plain.do(call{host: h, key: "key-a"}), 0, "a policy without hosts, host "+h)
	}
}

// A header a rule matches on is read in its own spelling only: another
// spelling never reaches the service, and sending it twice or in a list
// never takes a request out of the rule.
func TestSpellingsOfMatchedHeaders(t *testing.T) {
	r := newRig(t, hosted())
	want(t, r.do(call{path: "/other", host: "x", key: "key-a", h: hdr{"X-Env": {"prod"}}}), 0, "the first prod request")
	for _, h := range []hdr{
		{"X-Env": {"prod"}},
		{"X-Env": {"dev", "prod"}},
		{"X-Env": {"prod", "dev"}},
		{"X-Env": {"dev, prod"}},
		{"X-Env": {" prod "}},
	} {
		want(t, r.do(call{path: "/other", host: "x", key: "key-a", h: h}), 429, "X-Env "+strings.Join(h["X-Env"], " | "))
	}
	s := r.do(call{path: "/other", host: "x", key: "key-a", h: hdr{"X-Env": {"dev"}, "X_Env": {"prod"}, "X_ENV": {"prod"}}})
	want(t, s, 0, "X-Env dev beside respellings")
	if strings.Join(s.removed, ",") != "X_ENV,X_Env" {
		t.Errorf("removed %q, want the respellings X_ENV, X_Env", s.removed)
	}
}
