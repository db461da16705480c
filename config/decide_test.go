package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// With decide and no upstream, sluice runs the decision service alone:
// neither listen nor upstream is needed, and rules may be left out when
// Envoy's rule files are given.
func TestDecideAlone(t *testing.T) {
	f := mustParse(t, "decide:\n  http: 127.0.0.1:8082\nrules: [{name: api, rate: 10/s}]\n")
	if f.Upstream != nil || f.Listen != "" {
		t.Errorf("listen %q, upstream %v: want neither", f.Listen, f.Upstream)
	}
	want := Decide{HTTP: "127.0.0.1:8082", HTTPDenyStatus: 429}
	if !f.Decide.Equal(&want) {
		t.Errorf("decide %+v, want %+v", *f.Decide, want)
	}

	dir := t.TempDir()
	rules := filepath.Join(dir, "envoy")
	if err := os.Mkdir(rules, 0o755); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "sluice.yaml")
	text := "decide:\n  grpc: 127.0.0.1:8081\n  http_deny_status: 403\n  envoy_config: [envoy, " + rules + "]\n"
	f, err := Parse(name, []byte(text))
	if err != nil {
		t.Fatalf("rules from Envoy's files only: %v", err)
	}
	if want := []string{rules, rules}; !slices.Equal(f.Decide.EnvoyConfig, want) {
		t.Errorf("envoy_config %q, want %q (relative paths from the file's directory)", f.Decide.EnvoyConfig, want)
	}
	if f.Decide.HTTPDenyStatus != 403 || f.Decide.GRPC != "127.0.0.1:8081" || f.Compiled.Rules() != 0 {
		t.Errorf("decide %+v with %d rules", *f.Decide, f.Compiled.Rules())
	}
	var b strings.Builder
	if err := f.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"no upstream: the decision service only; admin 127.0.0.1:9090\n",
		"decide: Envoy gRPC on 127.0.0.1:8081; Envoy rule files " + rules + ", " + rules + "\n"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("summary lacks %q:\n%s", line, b.String())
		}
	}
}

// A gateway may also serve the decision service; its summary says both.
func TestDecideBesideGateway(t *testing.T) {
	f := mustParse(t, head+"decide: {http: 127.0.0.1:8082, http_deny_status: 403}\nrules: [{name: api, rate: 10/s}]\n")
	var b strings.Builder
	if err := f.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	want := "listen 127.0.0.1:8080 -> upstream http://127.0.0.1:9000; admin 127.0.0.1:9090\ndecide: /check on 127.0.0.1:8082 (over a limit: 403)\n"
	if !strings.HasPrefix(b.String(), want) {
		t.Errorf("summary starts\n%s\nwant\n%s", b.String(), want)
	}
}

func TestDecideErrors(t *testing.T) {
	const rules = "rules: [{name: api, rate: 10/s}]\n"
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"deny status", "decide:\n  http: 127.0.0.1:8082\n  http_deny_status: 503\n" + rules,
			[]string{`t.yaml:3:21: decide.http_deny_status: "503" is not a deny status sluice answers with (accepted: 429 (Traefik, direct callers) or 403 (nginx auth_request, which passes on only 401 and 403); default 429)`}},
		{"deny status a list", "decide:\n  http: 127.0.0.1:8082\n  http_deny_status: [403]\n" + rules,
			[]string{`t.yaml:3:21: decide.http_deny_status: want 429 or 403, not a list`}},
		{"nothing served", "decide:\n  http_deny_status: 403\n" + rules,
			[]string{"t.yaml:2:3: decide: neither grpc nor http is set: nothing would be served (such as grpc: 127.0.0.1:8081 for Envoy, http: 127.0.0.1:8082 for nginx and Traefik)"}},
		{"unknown field", "decide:\n  htp: 127.0.0.1:8082\n" + rules, []string{
			`t.yaml:2:3: decide: unknown field "htp" (did you mean "http"? accepted: grpc, http, http_deny_status, envoy_config)`,
			"t.yaml:2:3: decide: neither grpc nor http is set: nothing would be served (such as grpc: 127.0.0.1:8081 for Envoy, http: 127.0.0.1:8082 for nginx and Traefik)"}},
		{"not a mapping", "decide: 127.0.0.1:8082\n" + rules, []string{
			"t.yaml:1:1: listen: missing (required; such as listen: 127.0.0.1:8080)",
			"t.yaml:1:1: upstream: missing (required; such as upstream: http://127.0.0.1:9000, or an upstreams list)",
			"t.yaml:1:9: decide: want a mapping (grpc, http, http_deny_status, envoy_config), not a value"}},
		{"bad address", "decide:\n  http: 8082\n" + rules,
			[]string{`t.yaml:2:9: decide.http: "8082" is not host:port (such as 127.0.0.1:8080, [::1]:8080 or :8080)`}},
		{"no rules without envoy_config", "decide:\n  http: 127.0.0.1:8082\n",
			[]string{"t.yaml:1:1: rules: missing (required; such as rules: [{name: api, rate: 100/m}])"}},
		{"envoy_config missing", "decide:\n  grpc: 127.0.0.1:8081\n  envoy_config: [/nonexistent/ratelimit]\n",
			[]string{"t.yaml:3:18: decide.envoy_config[0]: /nonexistent/ratelimit does not exist (a file or directory of envoyproxy/ratelimit rules; a relative path is read from the configuration file's directory)"}},
		{"envoy_config empty path", "decide:\n  grpc: 127.0.0.1:8081\n  envoy_config: ['']\n",
			[]string{`t.yaml:3:18: decide.envoy_config[0]: "" is not a path (a file or directory of envoyproxy/ratelimit rules, such as /etc/ratelimit/config)`}},
		{"listen without upstream", "listen: 127.0.0.1:8080\ndecide:\n  http: 127.0.0.1:8082\n" + rules,
			[]string{"t.yaml:1:9: listen: without upstream sluice proxies nothing: listen would not be used (add upstream to run the gateway too, or remove listen to run only the decision service)"}},
		{"upstream without listen", "upstream: http://127.0.0.1:9000\ndecide:\n  http: 127.0.0.1:8082\n" + rules,
			[]string{"t.yaml:1:1: listen: missing (required; such as listen: 127.0.0.1:8080)"}},
		{"protect without upstream", "decide:\n  http: 127.0.0.1:8082\nprotect: {max_in_flight: 10}\n" + rules,
			[]string{"t.yaml:3:1: protect: without upstream sluice proxies nothing and cannot protect a service (add upstream, or remove protect)"}},
		{"access_log without upstream", "decide:\n  http: 127.0.0.1:8082\naccess_log: {}\n" + rules,
			[]string{"t.yaml:3:1: access_log: without upstream sluice serves no callers' requests: access_log would log nothing (add upstream, or remove access_log)"}},
		{"same as admin", "decide:\n  http: 127.0.0.1:9090\n" + rules,
			[]string{"t.yaml:2:9: decide.http: 127.0.0.1:9090 is also admin's address (each server needs its own port)"}},
		{"same as listen", head + "decide:\n  grpc: :8080\n" + rules,
			[]string{"t.yaml:4:9: decide.grpc: :8080 is also listen's address (each server needs its own port)"}},
		{"grpc and http alike", "decide: {grpc: 127.0.0.1:8081, http: 127.0.0.1:8081}\n" + rules,
			[]string{"t.yaml:1:38: decide.http: 127.0.0.1:8081 is also decide.grpc's address (each server needs its own port)"}},
		{"concurrency rule and /check", head + "decide: {http: 127.0.0.1:8082}\nrules: [{name: c, concurrency: 5}]\n",
			[]string{"t.yaml:4:32: rules[0].concurrency: /check (decide.http) cannot apply a concurrency rule: it answers before the request reaches the service and never learns when it ends (use a rate, or leave decide.http out and let sluice proxy the requests)"}},
		{"count failures and /check", head + "decide: {http: 127.0.0.1:8082}\nrules: [{name: f, rate: 5/m, count: failures}]\n",
			[]string{"t.yaml:4:37: rules[0].count: /check (decide.http) cannot apply count: failures: it answers before the request reaches the service and never learns its response (count all requests, or leave decide.http out and let sluice proxy the requests)"}},
		{"concurrency rule and Envoy's domain sluice", head + "decide: {grpc: 127.0.0.1:8081}\nrules: [{name: c, concurrency: 5}]\n",
			[]string{"t.yaml:4:32: rules[0].concurrency: Envoy's domain sluice (decide.grpc) cannot apply a concurrency rule: it answers before the request reaches the service and never learns when it ends (use a rate, or leave decide.grpc out and let sluice proxy the requests)"}},
		{"cost_header and /check", head + "decide: {http: 127.0.0.1:8082}\nrules: [{name: t, rate: 5/m, cost_header: X-Tokens}]\n",
			[]string{"t.yaml:4:43: rules[0].cost_header: /check (decide.http) cannot apply cost_header: it answers before the request reaches the service and never learns its response (charge a fixed cost, or leave decide.http out and let sluice proxy the requests)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.text))
			if err == nil {
				t.Fatalf("accepted; want %q", tc.want)
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", err, strings.Join(tc.want, "\n"))
			}
		})
	}
}

// A concurrency rule stays usable with Envoy's gRPC service alone (its
// server says what it does with one), and envoy_config without grpc is a
// warning: nothing reads it.
func TestDecideWarnings(t *testing.T) {
	f := mustParse(t, "decide:\n  http: 127.0.0.1:8082\n  envoy_config: [.]\n")
	want := "test.yaml:3:17: decide.envoy_config: only Envoy's gRPC service reads these rules, and decide.grpc is not set (set grpc: 127.0.0.1:8081, or remove envoy_config)"
	if len(f.Warnings) != 1 || f.Warnings[0].Error() != want {
		t.Errorf("warnings %v, want %q", f.Warnings, want)
	}
}

// With /check and no trusted_proxies, a rule counting by IP would count
// the proxy that asks: a warning at decide.http, none once the proxy is
// trusted or when no rule counts by IP.
func TestDecideWarnsOfTheProxyAddress(t *testing.T) {
	base := "decide:\n  http: 127.0.0.1:8082\nrules:\n  - {name: public, match: {path: /}, key: ip, rate: 10/m}\n"
	want := "test.yaml:2:9: decide.http: rules[0] (public) counts callers by IP address, and trusted_proxies is empty: /check would count every caller " +
		"of the proxy that asks (nginx, Traefik) as that proxy's address, all in one count (list the proxy's address in trusted_proxies)"
	if f := mustParse(t, base); len(f.Warnings) != 1 || f.Warnings[0].Error() != want {
		t.Errorf("warnings %v, want %q", f.Warnings, want)
	}
	anonymous := "clients:\n  unknown: anonymous\n  list: [{id: a, keys: [key-a-1234567890]}]\n" + strings.Replace(base, "key: ip", "key: client", 1)
	if f := mustParse(t, anonymous); len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0].Error(), "rules[0] (public) counts callers by IP address") {
		t.Errorf("anonymous callers: warnings %v, want one", f.Warnings)
	}
	for _, text := range []string{
		"trusted_proxies: [127.0.0.1]\n" + base,
		strings.Replace(base, "key: ip", "key: global", 1),
		strings.Replace(base, "http: 127.0.0.1:8082", "grpc: 127.0.0.1:8081", 1),
	} {
		if f := mustParse(t, text); len(f.Warnings) != 0 {
			t.Errorf("%s: warnings %v, want none", text, f.Warnings)
		}
	}
}
