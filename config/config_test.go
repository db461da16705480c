package config

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

func TestDesignFile(t *testing.T) {
	f, err := Load("testdata/design.yaml")
	if err != nil {
		t.Fatalf("the DESIGN.md file must be accepted as written:\n%v", err)
	}
	// DESIGN.md's claims rule gives sliding_window a burst, which it
	// ignores: the file stays accepted, with the one warning.
	if len(f.Warnings) != 1 || f.Warnings[0].Line != 50 || !strings.Contains(f.Warnings[0].Msg, "rules[0].burst: a burst applies only to") {
		t.Errorf("warnings: %v, want the one of rules[0].burst", f.Warnings)
	}
	if f.Path != "testdata/design.yaml" || f.Listen != "127.0.0.1:8080" || f.Upstream.String() != "http://127.0.0.1:9000" ||
		f.Admin != "127.0.0.1:9090" || f.LegacyHeaders {
		t.Errorf("settings: %+v", f)
	}
	wantStore := Store{Type: "memory", OnFailure: store.FailOpen, Instances: 3, MaxKeys: DefaultMaxKeys, MaxLogEntries: DefaultMaxLogEntries, MaxRLSKeys: DefaultMaxRLSKeys, LeaseTTL: DefaultLeaseTTL,
		Redis: Redis{Addrs: []string{"127.0.0.1:6379"}, Timeout: 50 * time.Millisecond, Prefix: "sluice:"}}
	if !f.Store.Equal(wantStore) {
		t.Errorf("store = %+v, want %+v", f.Store, wantStore)
	}
	p := f.Policy
	if len(p.TrustedProxies) != 0 || p.ForwardedHeader != policy.XForwardedFor || p.IPv6Prefix != 64 || p.Clients.KeyHeader != "X-API-Key" ||
		p.Clients.Unknown != policy.UnknownReject || len(p.Clients.List) != 3 || len(p.Plans) != 2 {
		t.Errorf("policy: %+v", p)
	}
	c := f.Compiled
	if c.Rules() != 7 { // claims, then the six of "Protecting the service itself"
		t.Fatalf("%d rules, want 7", c.Rules())
	}
	if f.Protect == nil || f.Protect.MaxInFlight != 200 || f.Protect.Adaptive == nil || f.Protect.Queue.MaxLength != 1000 {
		t.Errorf("protect: %+v", f.Protect)
	}
	r := c.Rule(0)
	if r.Name != "claims" || r.Match.Path != "/claims" || !slices.Equal(r.Match.Methods, []string{"GET"}) ||
		r.Key != (policy.KeySpec{Kind: policy.KeyClient}) || r.Algorithm != limiter.SlidingWindow ||
		r.Burst != 100 || r.Cost != 1 || r.Mode != policy.Enforce || len(r.Allow)+len(r.AllowNets) != 0 {
		t.Errorf("rule: %+v", r)
	}
	for _, tc := range []struct {
		id, plan string
		rate     int64
	}{
		{"partner-a", "standard", 100}, // standard has no override
		{"partner-b", "large", 1000},
		{"assessor-c", "", 500}, // its own limit
	} {
		cl, ok := c.CallerByID(tc.id)
		if !ok {
			t.Errorf("client %s missing", tc.id)
			continue
		}
		if l := cl.Limit(0); cl.Plan != tc.plan || l.Rate() != tc.rate || l.Period() != time.Minute {
			t.Errorf("%s: plan %q limit %v, want plan %q %d/m", tc.id, cl.Plan, l, tc.plan, tc.rate)
		}
	}
	if cl, ok := c.CallerByKey("key-b"); !ok || cl.ID != "partner-b" {
		t.Errorf("key-b is not partner-b's key")
	}
}

func TestDefaults(t *testing.T) {
	f := mustParse(t, minimal)
	if f.Admin != DefaultAdmin || f.LegacyHeaders {
		t.Errorf("admin %q, legacy %v", f.Admin, f.LegacyHeaders)
	}
	want := Store{Type: "memory", OnFailure: store.FailOpen, Instances: 1, MaxKeys: DefaultMaxKeys, MaxLogEntries: DefaultMaxLogEntries, MaxRLSKeys: DefaultMaxRLSKeys, LeaseTTL: DefaultLeaseTTL,
		Redis: Redis{Timeout: DefaultRedisTimeout, Prefix: DefaultRedisPrefix}}
	if !f.Store.Equal(want) {
		t.Errorf("store = %+v, want %+v", f.Store, want)
	}
	r := f.Compiled.Rule(0)
	if r.Key.Kind != policy.KeyIP || r.Algorithm != limiter.SlidingWindow || r.Cost != 1 || r.Mode != policy.Enforce {
		t.Errorf("rule defaults: %+v", r)
	}
	if f.Policy.IPv6Prefix != 64 || f.Compiled.KeyHeader() != "X-API-Key" || f.Compiled.IdentifiesByKey() {
		t.Errorf("policy defaults: %+v", f.Policy)
	}
}

// everySetting sets every field to something other than its default.
const everySetting = `
listen: ":8080"
upstream: https://claims.internal:8443/api
admin: "[::1]:9191"
legacy_headers: true
trusted_proxies: [10.1.2.3/8, 192.0.2.7, "2001:db8::/32", "::ffff:198.51.100.0/120"]
forwarded_header: forwarded
ipv6_prefix: 56
case_insensitive_paths: true
store:
  type: redis
  redis: {addrs: ["r1:6379", "r2:6379"], timeout: 20ms, username: sluice, password: secret, tls: true, prefix: "gw:"}
  memory: {max_keys: 5000, max_log_entries: 20000, max_rls_keys: 300}
  on_failure: local
  instances: 4
clients:
  key_header: Authorization
  unknown: anonymous
  list:
    - {id: a, keys: [k1, k2], plan: gold}
plans:
  gold: {api: 50/s, login: 2/s}
  anonymous: {api: 1/s}
rules:
  - name: api
    match: {path: /, methods: [GET, POST]}
    key: header:X-Tenant
    algorithm: gcra
    rate: 10/s
    burst: 20
    cost: 2
    mode: shadow
    allow: [a, 203.0.113.0/24, "::1"]
  - name: login
    key: global
    rate: 5/1500ms
`

func TestEverySetting(t *testing.T) {
	f := mustParse(t, everySetting)
	want := Store{Type: "redis", OnFailure: store.FailLocal, Instances: 4, MaxKeys: 5000, MaxLogEntries: 20000, MaxRLSKeys: 300, LeaseTTL: DefaultLeaseTTL, Redis: Redis{
		Addrs: []string{"r1:6379", "r2:6379"}, Timeout: 20 * time.Millisecond, Username: "sluice", Password: "secret", TLS: true, Prefix: "gw:"}}
	if f.Listen != ":8080" || f.Admin != "[::1]:9191" || !f.LegacyHeaders || f.Upstream.Path != "/api" || !f.Store.Equal(want) {
		t.Errorf("settings: %+v store %+v", f, f.Store)
	}
	p := f.Policy
	nets := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"), netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("198.51.100.0/24")}
	if !slices.Equal(p.TrustedProxies, nets) || p.ForwardedHeader != policy.Forwarded || p.IPv6Prefix != 56 || p.Clients.Unknown != policy.UnknownAnonymous ||
		!p.CaseInsensitivePaths {
		t.Errorf("policy: %+v", p)
	}
	r := f.Compiled.Rule(0)
	if r.Key != (policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant"}) || r.Algorithm != limiter.GCRA ||
		r.Burst != 20 || r.Cost != 2 || r.Mode != policy.Shadow || !slices.Equal(r.Allow, []string{"a"}) ||
		!slices.Equal(r.AllowNets, []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("::1/128")}) {
		t.Errorf("rule 0: %+v", r)
	}
	if r := f.Compiled.Rule(1); r.Key.Kind != policy.KeyGlobal || r.Rate != (policy.Rate{N: 5, Period: 1500 * time.Millisecond}) {
		t.Errorf("rule 1: %+v", r)
	}
	// The plan's override scales the burst in proportion: 50/s -> burst 100.
	a, _ := f.Compiled.CallerByID("a")
	if l := a.Limit(0); l.Rate() != 50 || l.Burst() != 100 {
		t.Errorf("client a: %v", l)
	}
	if l := f.Compiled.Anonymous().Limit(0); l.Rate() != 1 || l.Burst() != 2 {
		t.Errorf("anonymous: %v", l)
	}
}

func TestKeyDefaultsToClientWithClients(t *testing.T) {
	f := mustParse(t, minimal+"clients: {list: [{id: a, keys: [k]}]}\n")
	if k := f.Compiled.Rule(0).Key; k.Kind != policy.KeyClient {
		t.Errorf("key = %v, want client", k)
	}
}

// forwarded_header names a header, so its case does not matter; absent or
// empty, it is X-Forwarded-For.
func TestForwardedHeader(t *testing.T) {
	for text, want := range map[string]policy.ForwardedHeader{
		"":                                    policy.XForwardedFor,
		"forwarded_header:\n":                 policy.XForwardedFor,
		"forwarded_header: x-forwarded-for\n": policy.XForwardedFor,
		"forwarded_header: X-Forwarded-For\n": policy.XForwardedFor,
		"forwarded_header: forwarded\n":       policy.Forwarded,
		"forwarded_header: Forwarded\n":       policy.Forwarded,
	} {
		f := mustParse(t, "trusted_proxies: [10.0.0.0/8]\n"+text+minimal)
		if got := f.Compiled.ForwardedHeader(); got != want {
			t.Errorf("%q: reads %v, want %v", text, got, want)
		}
	}
}

// Windows and old Mac line ends, and a byte order mark, are text too; the
// positions of problems count lines as YAML does.
func TestLineEnds(t *testing.T) {
	design, err := os.ReadFile("testdata/design.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crlf := strings.ReplaceAll(string(design), "\n", "\r\n")
	mustParse(t, crlf)
	mustParse(t, "\uFEFF"+strings.ReplaceAll(string(design), "\n", "\r"))
	for _, nl := range []string{"\r\n", "\r"} {
		text := strings.ReplaceAll(minimal+"    mode: shadowy\n", "\n", nl)
		_, err := Parse("t.yaml", []byte(text))
		if want := `t.yaml:6:11: rules[0].mode: unknown value "shadowy" (did you mean "shadow"? accepted: enforce, shadow)`; err == nil || err.Error() != want {
			t.Errorf("%q: %v\nwant %s", nl, err, want)
		}
		text = strings.ReplaceAll(minimal+"    mode: a: b\n", "\n", nl)
		if _, err := Parse("t.yaml", []byte(text)); err == nil || !strings.HasPrefix(err.Error(), "t.yaml:6:12: YAML syntax") {
			t.Errorf("%q: %v, want a syntax error at 6:12", nl, err)
		}
	}
}

func TestExampleFile(t *testing.T) {
	f, err := Load("../examples/sluice.yaml")
	if err != nil {
		t.Fatalf("examples/sluice.yaml:\n%v", err)
	}
	if f.Compiled.Rules() == 0 {
		t.Error("no rules")
	}
}

func TestRedisDefaultAddr(t *testing.T) {
	f := mustParse(t, minimal+"store: {type: redis, redis: {addrs: []}}\n")
	if !slices.Equal(f.Store.Redis.Addrs, []string{DefaultRedisAddr}) || f.Store.Redis.Timeout != DefaultRedisTimeout {
		t.Errorf("redis = %+v", f.Store.Redis)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want fs.ErrNotExist", err)
	}
}

func TestLoadTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.yaml")
	data := []byte(minimal + "#" + strings.Repeat("x", MaxFileSize) + "\n")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	want := path + ": file is larger than 1 MiB (a configuration file is at most 1048576 bytes)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

func TestErrorFormat(t *testing.T) {
	es := Errors{
		{File: "f.yaml", Line: 3, Col: 7, Msg: "a"},
		{File: "f.yaml", Line: 4, Msg: "b"},
		{File: "f.yaml", Msg: "c"},
	}
	if got, want := es.Error(), "f.yaml:3:7: a\nf.yaml:4: b\nf.yaml: c"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	_, err := Parse("f.yaml", []byte("listen: [\n"))
	var list Errors
	if !errors.As(err, &list) || len(list) != 1 || list[0].Line != 1 {
		t.Errorf("errors.As(%v) = %v", err, list)
	}
}

func TestWriteSummary(t *testing.T) {
	f, err := Load("testdata/design.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := f.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	want := `listen 127.0.0.1:8080 -> upstream http://127.0.0.1:9000; admin 127.0.0.1:9090
store: memory (at most 1000000 keys); on store failure: open
protect: at most 200 in flight, adaptive from 8 (p99 target 250ms), queue 1000 (max wait 1s), shedding from 0.8 of the limit, upstream back-off
clients: 3, recognised by X-API-Key; unknown callers: rejected (401)

RULE               MATCH         KEY     ALGORITHM       RATE            BURST         COST                    MODE     NEVER LIMITED  PRIORITY
claims             GET /claims   client  sliding_window  100/m           -             1                       enforce  -              -
claims-read        GET /claims   client  sliding_window  100/m           -             1                       enforce  -              critical
reports            /reports      client  -               - (classifies)  -             1                       enforce  -              low, degrade
partner-in-flight  /claims       client  concurrency     10 in flight    -             1                       enforce  -              -
uploads            POST /claims  client  leaky_bucket    10/s            10, delay 2s  1                       enforce  -              -
login-failures     POST /login   ip      sliding_window  5/15m           -             1, failures only        enforce  -              -
tokens             /v1/complete  client  token_bucket    100000/h        100000        1, then X-Usage-Tokens  enforce  -              -

RULE               CLIENT      PLAN      LIMIT                   FROM
claims             partner-a   standard  100/m                   rule
claims             partner-b   large     1000/m                  plan
claims             assessor-c  -         500/m                   client
claims-read        partner-a   standard  100/m                   rule
claims-read        partner-b   large     100/m                   rule
claims-read        assessor-c  -         100/m                   rule
partner-in-flight  partner-a   standard  10 in flight            rule
partner-in-flight  partner-b   large     10 in flight            rule
partner-in-flight  assessor-c  -         10 in flight            rule
uploads            partner-a   standard  10/s burst 10 delay 2s  rule
uploads            partner-b   large     10/s burst 10 delay 2s  rule
uploads            assessor-c  -         10/s burst 10 delay 2s  rule
login-failures     partner-a   standard  5/15m                   rule
login-failures     partner-b   large     5/15m                   rule
login-failures     assessor-c  -         5/15m                   rule
tokens             partner-a   standard  100000/h burst 100000   rule
tokens             partner-b   large     100000/h burst 100000   rule
tokens             assessor-c  -         100000/h burst 100000   rule
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestWriteSummaryEverySetting(t *testing.T) {
	var b strings.Builder
	if err := mustParse(t, everySetting).WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	want := `listen :8080 -> upstream https://claims.internal:8443/api; admin [::1]:9191
store: redis r1:6379, r2:6379 (timeout 20ms, prefix "gw:", TLS); on store failure: local (each of 4 instances allows limit/4)
trusted proxies: [10.0.0.0/8 192.0.2.7/32 2001:db8::/32 198.51.100.0/24]; callers read from Forwarded only
clients: 1, recognised by Authorization; unknown callers: counted by IP, plan anonymous
paths matched regardless of case; IPv6 callers counted by /56; legacy X-RateLimit-* headers sent

RULE   MATCH       KEY                                ALGORITHM       RATE    BURST  COST  MODE     NEVER LIMITED
api    GET,POST /  header:X-Tenant (missing: shared)  gcra            10/s    20     2     shadow   a,203.0.113.0/24,::1/128
login  /           global                             sliding_window  5/1.5s  -      1     enforce  -

RULE   CLIENT     PLAN       LIMIT           FROM
api    a          gold       50/s burst 100  plan
api    (unknown)  anonymous  1/s burst 2     plan
login  a          gold       2/s             plan
login  (unknown)  anonymous  5/1.5s          rule
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

const minimal = `listen: 127.0.0.1:8080
upstream: http://127.0.0.1:9000
rules:
  - name: api
    rate: 10/s
`

func mustParse(t *testing.T, text string) *File {
	t.Helper()
	f, err := Parse("test.yaml", []byte(text))
	if err != nil {
		t.Fatalf("unexpected errors:\n%v", err)
	}
	return f
}

// TestLoadOnStore: a file read for a reload is checked against the store
// still running as well as its own: with gossip running, a token_bucket
// rule is refused even when the file says memory.
func TestLoadOnStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.yaml")
	text := "listen: 127.0.0.1:8080\nupstream: http://127.0.0.1:9000\nstore: {type: memory}\nrules:\n  - {name: a, algorithm: token_bucket, rate: 10/s}\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	want := path + ":5:26: rules[0].algorithm: rule a: token_bucket is not kept by store type gossip, running until a restart, whose bound"
	if _, err := LoadOnStore(path, Store{Type: "gossip"}); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("on gossip: %v\nwant %s", err, want)
	}
	for _, st := range []Store{{Type: "memory"}, {Type: "redis"}} {
		if _, err := LoadOnStore(path, st); err != nil {
			t.Errorf("on %s: %v", st.Type, err)
		}
	}
}
