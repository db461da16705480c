package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/internal/redistest"
)

// sluiceBinary is the sluice command, built once by TestMain as make build
// builds it (CGO_ENABLED=0, -trimpath), so that its packages compile once
// for this package and cmd/sluice's tests.
var sluiceBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-deploy-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sluiceBinary = filepath.Join(dir, "sluice")
	build := exec.Command("go", "build", "-trimpath", "-o", sluiceBinary, "../cmd/sluice")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// liveConfig has every part whose series the dashboard and the alerts
// read: clients and rules, a Redis store, protect, an upstream.
const liveConfig = `listen: 127.0.0.1:0
admin: 127.0.0.1:0
upstream: %s
store:
  type: redis
  redis: { addrs: [%s], prefix: "%s" }
protect:
  max_in_flight: 10
  queue: { max_wait: 1s }
clients:
  key_header: X-API-Key
  list:
    - { id: partner-a, keys: [live-key-a-5f1c2e] }
rules:
  - name: claims
    match: { path: /claims }
    key: client
    rate: 3/m
`

// series are the series of a /metrics page: for each name, the label sets
// of its samples.
type series map[string][]map[string]string

// liveSeries runs `sluice serve` with liveConfig on a real Redis, sends it
// requests that are passed (200 and 500 from the upstream), limited and
// refused as unknown, and returns its /metrics.
func liveSeries(t *testing.T) series {
	t.Helper()
	redis := redistest.StartServer(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/broken") {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(up.Close)
	cfg := filepath.Join(t.TempDir(), "sluice.yaml")
	text := fmt.Sprintf(liveConfig, up.URL, redis.Addr, redistest.KeyPrefix(t))
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	listen, admin := startSluice(t, cfg)
	c := &http.Client{Timeout: 10 * time.Second}
	for _, path := range []string{"/claims/1", "/claims/broken", "/claims/2", "/claims/3", "/claims/4"} {
		get(t, c, "http://"+listen+path, "live-key-a-5f1c2e")
	}
	get(t, c, "http://"+listen+"/claims/1", "not-a-key")
	if resp, err := c.Post("http://"+admin+"/reload", "", nil); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	return parseSeries(t, get(t, c, "http://"+admin+"/metrics", ""))
}

// startSluice starts `sluice serve --config cfg` and returns its listen and
// admin addresses from its "sluice serving" line; it is stopped with
// SIGTERM when the test ends.
func startSluice(t *testing.T, cfg string) (listen, admin string) {
	t.Helper()
	var logs lockedBuffer
	cmd := exec.Command(sluiceBinary, "serve", "--config", cfg)
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("sluice's log:\n%s", logs.String())
		}
	})
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var l struct{ Msg, Listen, Admin string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "sluice serving" {
				return l.Listen, l.Admin
			}
		}
		select {
		case <-exited:
			t.Fatalf("sluice serve exited:\n%s", logs.String())
		default:
		}
	}
	t.Fatalf("no serving line from sluice within 20s:\n%s", logs.String())
	return "", ""
}

// get fetches url, with key as X-API-Key unless empty, and returns the body.
func get(t *testing.T, c *http.Client, url, key string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sampleLine is one sample of the text format: a name, its labels, a value.
var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$`)

// labelPair is one label of a sample; values are quoted with \\, \" and \n
// escaped.
var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?`)

// parseSeries reads a /metrics page in the Prometheus text format.
func parseSeries(t *testing.T, text string) series {
	t.Helper()
	s := series{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("/metrics: not a sample: %q", line)
		}
		labels := map[string]string{}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			labels[p[1]] = strings.NewReplacer(`\\`, `\`, `\"`, `"`, `\n`, "\n").Replace(p[2])
		}
		s[m[1]] = append(s[m[1]], labels)
	}
	return s
}

// scrapeLabels are added by Prometheus to every series it scrapes; no
// /metrics page has them.
var scrapeLabels = []string{"job", "instance"}

// selector is one series selector of a query: a name and its matchers.
type selector struct {
	name     string
	matchers [][3]string // label, operator, value
}

var (
	selectorRE = regexp.MustCompile(`\b(sluice_[a-z0-9_]+)\b(\{[^}]*\})?`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
	groupingRE = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
)

// checkQuery checks a PromQL query against the series of a live /metrics:
// every sluice series it selects exists; each label it matches is one of
// that series' labels (or a label Prometheus adds when scraping), and one
// matched with = has that value in a sample; each label it groups by is a
// label of one of the series it selects (le: of a histogram's buckets).
// It reads selectors and grouping clauses, not the whole of PromQL: enough
// for the dashboard's and the alerts' queries, which name every series in
// full.
func checkQuery(live series, query string) []string {
	var problems []string
	var selected []string
	for _, m := range selectorRE.FindAllStringSubmatch(query, -1) {
		sel := selector{name: m[1]}
		for _, mm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
			sel.matchers = append(sel.matchers, [3]string{mm[1], mm[2], mm[3]})
		}
		selected = append(selected, sel.name)
		problems = append(problems, checkSelector(live, sel)...)
	}
	if len(selected) == 0 {
		problems = append(problems, "selects no sluice series")
	}
	for _, g := range groupingRE.FindAllStringSubmatch(query, -1) {
		for l := range strings.SplitSeq(g[1], ",") {
			l = strings.TrimSpace(l)
			if l == "" || slices.Contains(scrapeLabels, l) {
				continue
			}
			if !slices.ContainsFunc(selected, func(name string) bool { return hasLabel(live[name], l) }) {
				problems = append(problems, fmt.Sprintf("groups by %q, a label of none of %v", l, selected))
			}
		}
	}
	return problems
}

func checkSelector(live series, sel selector) []string {
	samples, ok := live[sel.name]
	if !ok {
		return []string{fmt.Sprintf("%s is not in a live sluice's /metrics", sel.name)}
	}
	var problems []string
	for _, m := range sel.matchers {
		label, op, value := m[0], m[1], m[2]
		switch {
		case slices.Contains(scrapeLabels, label):
		case !hasLabel(samples, label):
			problems = append(problems, fmt.Sprintf("%s has no label %q", sel.name, label))
		case op == "=" && !slices.ContainsFunc(samples, func(l map[string]string) bool { return l[label] == value }):
			problems = append(problems, fmt.Sprintf("%s has no sample with %s=%q", sel.name, label, value))
		}
	}
	return problems
}

func hasLabel(samples []map[string]string, label string) bool {
	return slices.ContainsFunc(samples, func(l map[string]string) bool { _, ok := l[label]; return ok })
}

// lockedBuffer collects a process's stderr while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
