package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWarnings: settings that work but are dangerous are warnings with
// their position; the file stays valid.
func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"defaults", head + "rules: [{name: a, rate: 1/s}]\n", nil},
		{"loopback admin", head + "admin: 127.0.0.1:9\nrules: [{name: a, rate: 1/s}]\n", nil},
		{"localhost admin", head + "admin: localhost:9\nrules: [{name: a, rate: 1/s}]\n", nil},
		{"IPv6 loopback admin", head + "admin: '[::1]:9'\nrules: [{name: a, rate: 1/s}]\n", nil},
		{"every interface", head + "admin: :9090\nrules: [{name: a, rate: 1/s}]\n", []string{
			"t.yaml:3:8: admin: :9090 is reachable from other machines and no admin.token is set: anyone who reaches it can reload the configuration and read the metrics (bind 127.0.0.1, or set admin: {listen: :9090, token: env:SLUICE_ADMIN_TOKEN})"}},
		{"public address", head + "admin: {listen: 192.0.2.7:9090}\nrules: [{name: a, rate: 1/s}]\n", []string{
			"t.yaml:3:17: admin.listen: 192.0.2.7:9090 is reachable from other machines and no admin.token is set: anyone who reaches it can reload the configuration and read the metrics (bind 127.0.0.1, or set admin: {listen: 192.0.2.7:9090, token: env:SLUICE_ADMIN_TOKEN})"}},
		{"host name", head + "admin: gw.internal:9090\nrules: [{name: a, rate: 1/s}]\n", []string{
			"t.yaml:3:8: admin: gw.internal:9090 is reachable from other machines and no admin.token is set: anyone who reaches it can reload the configuration and read the metrics (bind 127.0.0.1, or set admin: {listen: gw.internal:9090, token: env:SLUICE_ADMIN_TOKEN})"}},
		{"gossip in the clear", head + "store: {type: gossip, gossip: {bind: 0.0.0.0:7946, join: [10.0.0.2:7946]}}\nrules: [{name: a, rate: 1/s}]\n", []string{
			"t.yaml:3:38: store.gossip.bind: 0.0.0.0:7946 is reachable from other machines and no store.gossip.key is set: anyone who reaches it can read the counts and join the fleet with counts of its own (set key: env:SLUICE_GOSSIP_KEY, the base64 of 32 random bytes)"}},
		{"gossip on loopback", head + "store: {type: gossip, gossip: {bind: 127.0.0.1:7946, join: [127.0.0.1:7947]}}\nrules: [{name: a, rate: 1/s}]\n", nil},
		{"with a token", head + "admin: {listen: 0.0.0.0:9090, token: 0123456789abcdef}\nrules: [{name: a, rate: 1/s}]\n", nil},
		{"short token", head + "admin: {listen: 0.0.0.0:9090, token: s3cret}\nrules: [{name: a, rate: 1/s}]\n", []string{
			"t.yaml:3:38: admin.token: the token is 6 characters: easy to guess (at least 16 random characters, such as the output of `openssl rand -hex 16`)"}},
		{"allow everyone", head + "rules: [{name: a, rate: 1/s, allow: [192.0.2.0/24, 0.0.0.0/0]}]\n", []string{
			"t.yaml:3:52: rules[0].allow[1]: 0.0.0.0/0 is every address: the rule never limits anyone (list the networks it should not limit, such as 10.0.0.0/8)"}},
		{"every address trusted", head + "trusted_proxies: [10.0.0.0/8, 0.0.0.0/0, '::/0']\nrules: [{name: a, rate: 1/s}]\n", []string{
			"t.yaml:3:31: trusted_proxies[1]: 0.0.0.0/0 trusts every address as a proxy: any caller can name the address it is counted by (list only your proxies' networks, such as 10.0.0.0/8)",
			"t.yaml:3:42: trusted_proxies[2]: ::/0 trusts every address as a proxy: any caller can name the address it is counted by (list only your proxies' networks, such as 10.0.0.0/8)"}},
		{"plan lowering priority", head + "plans: {bulk: {priority: low}, gold: {priority: high}}\nrules: [{name: a, rate: 1/s}]\n", []string{
			"t.yaml:3:26: plans.bulk.priority: low does nothing: a plan raises its clients' priority, never lowers it (give the rules of the work to shed first priority: low)"}},
		{"burst on a window", head + "rules: [{name: a, algorithm: fixed_window, rate: 1/s, burst: 5}, {name: b, rate: 1/s, burst: 5}, {name: c, algorithm: gcra, rate: 1/s, burst: 5}]\n", []string{
			"t.yaml:3:62: rules[0].burst: a burst applies only to token_bucket, gcra and leaky_bucket (rule a is fixed_window): it is ignored (remove it, or choose one of those algorithms)",
			"t.yaml:3:94: rules[1].burst: a burst applies only to token_bucket, gcra and leaky_bucket (rule b is sliding_window, the default): it is ignored (remove it, or choose one of those algorithms)"}},
	} {
		f, err := Parse("t.yaml", []byte(tc.text))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var got []string
		for _, w := range f.Warnings {
			got = append(got, w.Error())
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: warnings\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}

// TestAdminForms: admin is host:port as DESIGN.md writes it, or a mapping
// that also carries a token.
func TestAdminForms(t *testing.T) {
	for text, want := range map[string][2]string{
		"":                               {DefaultAdmin, ""},
		"admin: 127.0.0.1:7\n":           {"127.0.0.1:7", ""},
		"admin: {listen: 127.0.0.1:7}\n": {"127.0.0.1:7", ""},
		"admin: {token: tok}\n":          {DefaultAdmin, "tok"},
		"admin: {listen: 127.0.0.1:7, token: t}\n": {"127.0.0.1:7", "t"},
	} {
		f := mustParse(t, minimal+text)
		if f.Admin != want[0] || f.AdminToken != want[1] {
			t.Errorf("%q: admin %q token %q, want %q %q", text, f.Admin, f.AdminToken, want[0], want[1])
		}
	}
}

// TestSecretReferences: access keys, the Redis user name and password and
// the admin token may be read from the environment or a file.
func TestSecretReferences(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("key", "key-from-file\n")
	write("crlf", "pw-from-file\r\n")
	write("tok", "tok-from-file")
	t.Setenv("SLUICE_TEST_KEY", "key-from-env")
	text := `listen: 127.0.0.1:8080
upstream: http://127.0.0.1:9000
admin: {listen: 127.0.0.1:9090, token: file:tok}
store: {type: redis, redis: {username: env:SLUICE_TEST_KEY, password: "file:` + filepath.Join(dir, "crlf") + `"}}
clients:
  list:
    - {id: a, keys: [env:SLUICE_TEST_KEY, file:key, "literal:env:SLUICE_TEST_KEY", plain]}
rules: [{name: a, rate: 1/s}]
`
	path := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path) // file:tok is relative to the configuration file
	if err != nil {
		t.Fatal(err)
	}
	if f.AdminToken != "tok-from-file" || f.Store.Redis.Username != "key-from-env" || f.Store.Redis.Password != "pw-from-file" {
		t.Errorf("token %q, redis user %q password %q", f.AdminToken, f.Store.Redis.Username, f.Store.Redis.Password)
	}
	for _, k := range []string{"key-from-env", "key-from-file", "env:SLUICE_TEST_KEY", "plain"} {
		if c, ok := f.Compiled.CallerByKey(k); !ok || c.ID != "a" {
			t.Errorf("key %q is not client a's", k)
		}
	}
}

// TestSecretReferenceErrors: a reference that cannot be resolved is an
// error at its position, naming the variable or file.
func TestSecretReferenceErrors(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SLUICE_TEST_EMPTY", "")
	if err := os.WriteFile(filepath.Join(dir, "empty"), []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ ref, want string }{
		{"env:SLUICE_TEST_UNSET_7c1", "t.yaml:3:33: clients.list[0].keys[0]: environment variable SLUICE_TEST_UNSET_7c1 is not set (env:SLUICE_TEST_UNSET_7c1 names it; write literal:env:SLUICE_TEST_UNSET_7c1 for a value that starts with env:)"},
		{"env:SLUICE_TEST_EMPTY", "t.yaml:3:33: clients.list[0].keys[0]: environment variable SLUICE_TEST_EMPTY is empty (env:SLUICE_TEST_EMPTY names it)"},
		{"env:", `t.yaml:3:33: clients.list[0].keys[0]: "env:": "" is not an environment variable name (env:NAME; write literal:env: for a value that starts with env:)`},
		{"file:" + filepath.Join(dir, "nope"), "t.yaml:3:33: clients.list[0].keys[0]: file:" + filepath.Join(dir, "nope") + ": cannot read the secret: no such file or directory"},
		{"file:" + dir, "t.yaml:3:33: clients.list[0].keys[0]: file:" + dir + ": not a regular file (a secret file holds the value, optionally with a trailing newline)"},
		{"file:" + filepath.Join(dir, "empty"), "t.yaml:3:33: clients.list[0].keys[0]: file:" + filepath.Join(dir, "empty") + ": the file is empty"},
	} {
		text := head + "clients: {list: [{id: a, keys: [\"" + tc.ref + "\"]}]}\nrules: [{name: a, rate: 1/s}]\n"
		_, err := Parse("t.yaml", []byte(text))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.ref, err, tc.want)
		}
	}
}

// TestLocalShareWarning: with on_failure: local each instance enforces its
// share of a limit; a cost above the smallest share (plans and clients
// included) refuses every such request while the store fails.
func TestLocalShareWarning(t *testing.T) {
	const file = head + `store: {type: redis, on_failure: local, instances: 4}
clients: {list: [{id: a, keys: [k], limits: {api: 8/m}}]}
rules:
  - name: api
    rate: 100/m
    cost: 3
  - name: ok
    rate: 100/m
    cost: 3
`
	f, err := Parse("t.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	want := "t.yaml:8:11: rules[0].cost: 3 is more than the 2 that each of 4 instances allows on its own (a limit of 8 at once, divided by store.instances) with on_failure: local: while the store fails, such requests are refused"
	if len(f.Warnings) != 1 || f.Warnings[0].Error() != want {
		t.Errorf("warnings %v, want\n%s", f.Warnings, want)
	}
	if f, err := Parse("t.yaml", []byte(strings.Replace(file, "instances: 4", "instances: 2", 1))); err != nil || len(f.Warnings) != 0 {
		t.Errorf("2 instances: warnings %v (%v), want none", f.Warnings, err)
	}
}

// TestAdminTokenUnsendable: a token that is not visible ASCII is an error:
// a trailing newline (an env: variable filled by `echo`) or a space at
// either end, which servers trim from the Authorization header, would
// make the admin port answer 401 forever. The token is not shown.
func TestAdminTokenUnsendable(t *testing.T) {
	t.Setenv("SLUICE_TEST_TOKEN", "0123456789abcdef\n")
	for _, tok := range []string{"env:SLUICE_TEST_TOKEN", `"0123456789abcdef "`, `" 0123456789abcdef"`, `"0123456789\tabcdef"`, `"0123456789abcdéf"`} {
		text := head + "admin: {listen: 127.0.0.1:9090, token: " + tok + "}\nrules: [{name: a, rate: 1/s}]\n"
		_, err := Parse("t.yaml", []byte(text))
		want := "t.yaml:3:40: admin.token: the token holds a space, a control or a non-ASCII character (a bearer token is visible ASCII characters only, such as the output of `openssl rand -hex 16`; an Authorization header loses spaces and newlines at its ends)"
		if err == nil || err.Error() != want {
			t.Errorf("token %s:\n got %v\nwant %s", tok, err, want)
		}
	}
	if _, err := Parse("t.yaml", []byte(head+"admin: {listen: 127.0.0.1:9090, token: \"0123456789-._~+/=abc\"}\nrules: [{name: a, rate: 1/s}]\n")); err != nil {
		t.Errorf("a token68 token: %v", err)
	}
}

// TestUpstreamErrorHidesUserInfo: an upstream refused for its user info
// (or for anything else) is shown without it: the error goes to logs.
func TestUpstreamErrorHidesUserInfo(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"http://user:s3cret@127.0.0.1:9000", `t.yaml:2:11: upstream: "http://xxxxx@127.0.0.1:9000": user info, query and fragment are not used (an http or https URL with a host, such as http://127.0.0.1:9000, optionally with a path)`},
		{"http://s3cret@127.0.0.1:9000/a@b", `t.yaml:2:11: upstream: "http://xxxxx@127.0.0.1:9000/a@b": user info, query and fragment are not used (an http or https URL with a host, such as http://127.0.0.1:9000, optionally with a path)`},
		{"http://u:s3cret%zz@127.0.0.1:9000", `t.yaml:2:11: upstream: "http://xxxxx@127.0.0.1:9000" is not a URL (an http or https URL with a host, such as http://127.0.0.1:9000)`},
		{"ftp://u:s3cret@h", `t.yaml:2:11: upstream: "ftp://xxxxx@h": scheme "ftp" is not http or https (an http or https URL with a host, such as http://127.0.0.1:9000)`},
	} {
		_, err := Parse("t.yaml", []byte("listen: 127.0.0.1:8080\nupstream: "+tc.url+"\nrules: [{name: a, rate: 1/s}]\n"))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.url, err, tc.want)
		}
	}
}
