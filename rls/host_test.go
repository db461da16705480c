package rls

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// hostPolicyText has a rule that matches on the host beside one that
// does not: every call is counted by one of them, and the answer's
// RateLimit-Policy says which.
const hostPolicyText = `
listen: 127.0.0.1:8080
upstream: http://127.0.0.1:9000
rules:
  - {name: api, match: {host: api.example.com, path: /claims}, key: ip, rate: 1/m}
  - {name: wild, match: {host: "*.tenants.example", path: /claims}, key: ip, rate: 1/m}
  - {name: claims, match: {path: /claims}, key: ip, rate: 3/m}
`

// TestPolicyDomainHost: the host is the value of a descriptor entry
// ":authority" or "host", cleaned and matched as the gateway matches a
// request's host (case, port and one trailing dot aside); a call that
// names no host is matched by the rules that do not match on the host,
// never refused.
func TestPolicyDomainHost(t *testing.T) {
	const (
		claimsPol = `"claims";q=3;w=60`
		apiPol    = `"api";q=1;w=60, ` + claimsPol
		wildPol   = `"wild";q=1;w=60, ` + claimsPol
	)
	h := startPolicyText(t, hostPolicyText)
	for i, tc := range []struct {
		name    string
		entries []string // besides remote_address and :path
		rules   string   // the rules the RateLimit-Policy names
	}{
		{"exact", []string{":authority=api.example.com"}, apiPol},
		{"the key host", []string{"host=api.example.com"}, apiPol},
		{"upper case", []string{":authority=API.Example.COM"}, apiPol},
		{"a port", []string{":authority=api.example.com:8443"}, apiPol},
		{"a trailing dot", []string{":authority=api.example.com."}, apiPol},
		{"all of them", []string{"host=Api.EXAMPLE.com.:443"}, apiPol},
		{"both keys, one host", []string{":authority=api.example.com", "host=api.example.com"}, apiPol},
		{"below a wildcard", []string{":authority=a.b.Tenants.Example:80"}, wildPol},
		{"the wildcard's own name", []string{":authority=tenants.example"}, claimsPol},
		{"another host", []string{":authority=www.example.com"}, claimsPol},
		{"a longer name", []string{":authority=api.example.com.evil"}, claimsPol},
		{"no host", nil, claimsPol},
		{"a header, not the host", []string{"header:host=api.example.com"}, claimsPol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := "10.0.0." + itoa(int64(i+1)) // a counter of its own
			d := desc(append([]string{"remote_address=" + addr, ":path=/claims/7"}, tc.entries...)...)
			resp := h.ask(request("sluice", d))
			if got, pol := brief(resp), headerMap(resp)["Ratelimit-Policy"]; got != "OK OK" || pol != tc.rules {
				t.Fatalf("got %q with RateLimit-Policy %q, want OK by %s", got, pol, tc.rules)
			}
		})
	}
	// The host rule counts: its second call in the minute is over.
	d := desc("remote_address=10.0.1.1", ":path=/claims", ":authority=api.example.com")
	if a, b := brief(h.ask(request("sluice", d))), brief(h.ask(request("sluice", d))); a != "OK OK" || b != "OVER_LIMIT OVER_LIMIT" {
		t.Errorf("api twice: %q then %q, want OK then OVER_LIMIT", a, b)
	}
}

// TestPolicyDomainBadHost: a host the gateway refuses with 400 is
// refused so here (OVER_LIMIT with the 400's problem body), the empty
// host named by an entry among them (a call with no entry for the host is
// not: TestPolicyDomainHost), and two
// different hosts in one call are InvalidArgument.
func TestPolicyDomainBadHost(t *testing.T) {
	h := startPolicyText(t, hostPolicyText)
	for _, host := range []string{"a..example.com", "api.example.com:http", "exa mple.com", "[::1", ""} {
		resp := h.ask(request("sluice", desc("remote_address=10.0.0.1", ":path=/claims", ":authority="+host)))
		if brief(resp) != "OVER_LIMIT OVER_LIMIT" || !strings.Contains(string(resp.GetRawBody()), `"status":400`) {
			t.Errorf("host %q: %q %s, want OVER_LIMIT with the gateway's 400", host, brief(resp), resp.GetRawBody())
		}
	}
	_, err := h.call(request("sluice", desc("remote_address=10.0.0.1", ":path=/claims", ":authority=api.example.com"),
		desc("host=www.example.com")))
	const want = `rls: :authority "api.example.com" and host "www.example.com": two hosts for one request`
	if st, _ := status.FromError(err); st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), want) {
		t.Errorf("two hosts: %v, want InvalidArgument %q", err, want)
	}
}
