package httpname

import "testing"

// TestNames: the hop-by-hop fields in any case, and the header names an
// upstream reads as one ('_' and '-' alike), but no other.
func TestNames(t *testing.T) {
	for _, c := range []struct {
		name string
		hop  bool
	}{
		{"Connection", true}, {"connection", true}, {"PROXY-CONNECTION", true}, {"Keep-Alive", true},
		{"Te", true}, {"TE", true}, {"Trailer", true}, {"Transfer-Encoding", true}, {"Upgrade", true},
		{"Proxy-Authenticate", true}, {"Proxy-Authorization", true},
		{"Trailers", false}, {"Transfer_Encoding", false}, {"Host", false}, {"", false}, {"Connectio", false},
	} {
		if got := HopByHop(c.name); got != c.hop {
			t.Errorf("HopByHop(%q) = %v, want %v", c.name, got, c.hop)
		}
	}
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"X-API-Key", "x_api_key", true}, {"X-Sluice-Client", "X_SLUICE-client", true}, {"a", "A", true},
		{"X-API-Key", "X-API-Keys", false}, {"X-API-Key", "X.API.Key", false}, {"X-A", "X A", false},
	} {
		if got := SameHeader(c.a, c.b); got != c.same {
			t.Errorf("SameHeader(%q, %q) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}

// TestCleanHostReasons: a refused host has a reason and no host; a clean
// one no reason (policy's tables hold the full behaviour).
func TestCleanHostReasons(t *testing.T) {
	for raw, want := range map[string]string{
		"API.Example.com.:8443": "api.example.com", "[2001:DB8::0001]": "[2001:db8::1]", "": "",
		"bücher.example": "xn--bcher-kva.example", "a..b": "", "a:b": "", "[::1": "",
	} {
		host, reason := CleanHost(raw)
		if host != want || (want == "" && raw != "") != (reason != "") {
			t.Errorf("CleanHost(%q) = %q, %q; want %q", raw, host, reason, want)
		}
	}
}
