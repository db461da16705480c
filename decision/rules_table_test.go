package decision_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A rule's path matches on segment boundaries, the query never counts, a
// GET rule covers HEAD, and a rule without path or methods matches every
// request. A matched rule is in the Report and speaks in RateLimit; an
// unmatched one is in neither and counts nothing.
func TestRulesMatch(t *testing.T) {
	for _, c := range []struct {
		rulePath string
		methods  []string
		method   string
		path     string
		match    bool
	}{
		{"/claims", []string{"GET"}, "GET", "/claims", true},
		{"/claims", []string{"GET"}, "GET", "/claims/", true},
		{"/claims", []string{"GET"}, "GET", "/claims/7", true},
		{"/claims", []string{"GET"}, "GET", "/claims/7/documents", true},
		{"/claims", []string{"GET"}, "GET", "/claimsx", false},
		{"/claims", []string{"GET"}, "GET", "/claims.json", false},
		{"/claims", []string{"GET"}, "GET", "/claim", false},
		{"/claims", []string{"GET"}, "GET", "/", false},
		{"/claims", []string{"GET"}, "GET", "/other/claims", false},
		{"/claims", []string{"GET"}, "POST", "/claims", false},
		{"/claims", []string{"GET"}, "HEAD", "/claims", true},
		{"/claims", []string{"HEAD"}, "GET", "/claims", false},
		{"/claims", []string{"POST", "PUT"}, "PUT", "/claims/7", true},
		{"/claims", []string{"POST", "PUT"}, "GET", "/claims/7", false},
		{"/claims/", []string{"GET"}, "GET", "/claims", true},
		{"/claims/", []string{"GET"}, "GET", "/claims/7", true},
		{"/claims/", []string{"GET"}, "GET", "/claimsx", false},
		{"/", []string{"GET"}, "GET", "/anything/at/all", true},
		{"", nil, "DELETE", "/x", true},
		{"", nil, "PURGE", "", true}, // "" reads as /
	} {
		p := partners()
		p.Rules[0].Match.Path, p.Rules[0].Match.Methods = c.rulePath, c.methods
		r := newRig(t, p)
		s := r.do(call{method: c.method, path: c.path, key: "key-a"})
		what := fmt.Sprintf("rule %q %v, %s %q", c.rulePath, c.methods, c.method, c.path)
		want(t, s, 0, what)
		matched := len(s.rep.Rules) == 1 && s.fields["Ratelimit-Policy"] == `"claims";q=3;w=60`
		if matched != c.match || len(s.rep.Rules) > 1 || r.mem.Len() != boolInt(c.match) {
			t.Errorf("%s: matched %v (rules %+v, %d counters), want %v", what, matched, s.rep.Rules, r.mem.Len(), c.match)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The methods of a rule share its counter.
func TestRulesMethodsShareTheCounter(t *testing.T) {
	p := partners()
	p.Rules[0].Match.Methods = []string{"POST", "PUT"}
	r := newRig(t, p)
	for i := range 5 {
		want(t, r.do(call{method: "GET", key: "key-a"}), 0, fmt.Sprintf("GET %d (not limited)", i))
	}
	for i, m := range []string{"POST", "PUT", "POST"} {
		want(t, r.do(call{method: m, key: "key-a"}), 0, fmt.Sprintf("%s %d", m, i))
	}
	want(t, r.do(call{method: "PUT", key: "key-a"}), 429, "the fourth write")
}

// A client's own limit beats its plan's, which beats the rule's, and
// RateLimit-Policy says the limit in force.
func TestRulesPlanAndClientLimits(t *testing.T) {
	for key, n := range map[string]int{"key-a": 3, "key-b": 5, "key-c": 4} {
		r := newRig(t, partners())
		passed := 0
		for range 8 {
			if r.do(call{key: key}).pass {
				passed++
			}
		}
		if passed != n {
			t.Errorf("%s: %d of 8 passed, want %d", key, passed, n)
		}
		s := r.do(call{key: key})
		if want := fmt.Sprintf(`"claims";q=%d;w=60`, n); s.fields["Ratelimit-Policy"] != want {
			t.Errorf("%s: RateLimit-Policy %q, want %q", key, s.fields["Ratelimit-Policy"], want)
		}
		if d, want := s.detail(), fmt.Sprintf("exceeded %d requests per 1m (rule claims)", n); !strings.Contains(d, want) {
			t.Errorf("%s: detail %q, want it to say %q", key, d, want)
		}
	}
}

// Retry-After is whole seconds, rounded up, at least 1; the detail says
// the same wait and the period as people say it.
func TestRulesRetryAfterRoundsUp(t *testing.T) {
	for _, c := range []struct {
		n      int64
		period time.Duration
		at     time.Duration // into the window, when the limit is full
		want   string
		detail string
	}{
		{1, time.Minute, 37 * time.Second, "23", "per 1m (rule claims); retry in 23s"},
		{1, time.Minute, 37*time.Second + time.Microsecond, "23", "retry in 23s"},
		{1, time.Minute, 36*time.Second + 999_999*time.Microsecond, "24", "retry in 24s"},
		{1, time.Second, 999_999 * time.Microsecond, "1", "retry in 1s"}, // 1 µs left: never 0
		{1, time.Second, 0, "1", "per 1s (rule claims); retry in 1s"},
		{1, 1500 * time.Millisecond, 100 * time.Millisecond, "2", "per 1.5s (rule claims); retry in 2s"},
		{1, time.Hour, 0, "3600", "per 1h (rule claims); retry in 3600s"},
		{1, 24 * time.Hour, 0, "86400", "per 1d (rule claims); retry in 86400s"},
		{1, 30 * time.Second, 0, "30", "per 30s (rule claims); retry in 30s"},
	} {
		p := partners()
		p.Rules[0].Rate = rate(c.n, c.period)
		p.Plans, p.Clients.List = nil, p.Clients.List[:1]
		p.Clients.List[0].Plan = ""
		r := newRig(t, p)
		r.clock.Advance(c.at)
		want(t, r.do(call{key: "key-a"}), 0, "first")
		s := r.do(call{key: "key-a"})
		if s.fields["Retry-After"] != c.want || !strings.Contains(s.detail(), c.detail) {
			t.Errorf("%v/%v at %v: Retry-After %q, detail %q; want %q, %q", c.n, c.period, c.at, s.fields["Retry-After"], s.detail(), c.want, c.detail)
		}
	}
}
