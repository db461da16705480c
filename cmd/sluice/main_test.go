package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// binary is the sluice command built once for the process tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-cmd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "sluice")
	build := exec.Command("go", "build", "-trimpath", "-o", binary, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build and make release build: their tests reuse what this compiled
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

const goodConfig = `listen: 127.0.0.1:8080
upstream: http://127.0.0.1:9000
clients:
  list:
    - id: partner-a
      keys: [key-a]
    - id: partner-b
      keys: [key-b]
rules:
  - name: claims
    match: { path: /claims, methods: [GET] }
    rate: 100/m
  - name: writes
    match: { path: /claims, methods: [POST] }
    rate: 10/m
`

// badConfig has four errors on four lines.
const badConfig = `listen: 127.0.0.1:99999
upstream: ftp://127.0.0.1:9000
rules:
  - name: claims
    algorithm: sliding_windw
    rate: 100/fortnight
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func runCmd(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestCheckGood: a valid file prints a count line and what the file does:
// the settings and a table of rules (config.WriteSummary), exit 0.
func TestCheckGood(t *testing.T) {
	path := writeFile(t, "good.yaml", goodConfig)
	code, out, errs := runCmd("check", "--config", path)
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, errs)
	}
	if errs != "" {
		t.Errorf("stderr not empty:\n%s", errs)
	}
	want := path + `: ok: 2 rules, 2 clients, 0 plans
listen 127.0.0.1:8080 -> upstream http://127.0.0.1:9000; admin 127.0.0.1:9090
store: memory (at most 1000000 keys); on store failure: open
clients: 2, recognised by X-API-Key; unknown callers: rejected (401)

RULE    MATCH         KEY     ALGORITHM       RATE   BURST  COST  MODE     NEVER LIMITED
claims  GET /claims   client  sliding_window  100/m  -      1     enforce  -
writes  POST /claims  client  sliding_window  10/m   -      1     enforce  -

RULE    CLIENT     PLAN  LIMIT  FROM
claims  partner-a  -     100/m  rule
claims  partner-b  -     100/m  rule
writes  partner-a  -     10/m   rule
writes  partner-b  -     10/m   rule
`
	if out != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
}

// TestCheckWarnings: warnings go to stderr as FILE:line:col: warning: ...,
// are counted on the ok line, and leave the exit status 0.
func TestCheckWarnings(t *testing.T) {
	path := writeFile(t, "warn.yaml", goodConfig+"admin: 0.0.0.0:9090\ntrusted_proxies: [0.0.0.0/0]\n")
	code, out, errs := runCmd("check", "--config", path)
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], path+":16:8: warning: admin: 0.0.0.0:9090 is reachable from other machines") ||
		!strings.HasPrefix(lines[1], path+":17:19: warning: trusted_proxies[0]: 0.0.0.0/0 trusts every address") {
		t.Errorf("stderr:\n%s\nwant two warnings at 16:8 and 17:19", errs)
	}
	if !strings.HasPrefix(out, path+": ok: 2 rules, 2 clients, 0 plans; 2 warnings\n") {
		t.Errorf("stdout:\n%s", out)
	}
}

// TestCheckImpossibleCost: a cost no limit can ever allow is an error.
func TestCheckImpossibleCost(t *testing.T) {
	path := writeFile(t, "cost.yaml", goodConfig+"    cost: 11\n")
	code, out, errs := runCmd("check", "--config", path)
	if code != 1 || out != "" || !strings.HasPrefix(errs, path+":16:11: rules[1].cost: 11 is more than the 10 that rate 10/m allows at once") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 and the cost's error", code, out, errs)
	}
}

func TestCheckBad(t *testing.T) {
	path := writeFile(t, "bad.yaml", badConfig)
	code, out, errs := runCmd("check", "--config", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errs)
	}
	if out != "" {
		t.Errorf("stdout not empty: %q", out)
	}
	lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
	pos := regexp.MustCompile(`^` + regexp.QuoteMeta(path) + `:(\d+):(\d+): \S`)
	wantLines := map[string]bool{"1": false, "2": false, "5": false, "6": false}
	for _, l := range lines {
		m := pos.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("stderr line not FILE:line:col: ...: %q", l)
			continue
		}
		wantLines[m[1]] = true
	}
	for line, seen := range wantLines {
		if !seen {
			t.Errorf("no error reported on line %s; stderr:\n%s", line, errs)
		}
	}
}

func TestCheckMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.yaml")
	code, _, errs := runCmd("check", "--config", path)
	if code != 1 || !strings.Contains(errs, "missing.yaml") {
		t.Errorf("exit %d, stderr %q; want 1 naming the file", code, errs)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Setenv("SLUICE_CONFIG", "")
	t.Chdir(t.TempDir()) // no sluice.yaml
	cases := []struct {
		args []string
		want string // on stderr
	}{
		{nil, "usage: sluice"},
		{[]string{"check"}, "sluice check: no configuration file: give one (FILE or --config FILE), set SLUICE_CONFIG, or put a sluice.yaml in the current directory\n\nusage: sluice check [--config] FILE"},
		{[]string{"check", "--config"}, "flag needs an argument"},
		{[]string{"check", "--config", "a.yaml", "extra"}, "sluice check: one configuration file, not 2 (a.yaml, extra)\n\nusage: sluice check [--config] FILE"},
		{[]string{"check", "a.yaml", "b.yaml"}, "sluice check: one configuration file, not 2 (a.yaml, b.yaml)"},
		{[]string{"check", "--nope"}, "flag provided but not defined"},
		{[]string{"check", "--format", "yaml", "a.yaml"}, `sluice check: --format: unknown value "yaml" (text or json)`},
		{[]string{"check", "--format", "json", "--explain", "GET /", "a.yaml"}, "--explain prints JSON already"},
		{[]string{"serve"}, "sluice serve: no configuration file: give one (FILE or --config FILE), set SLUICE_CONFIG, or put a sluice.yaml in the current directory\n\nusage: sluice serve [--config] FILE"},
		{[]string{"serve", "--log-level", "loud", "a.yaml"}, `invalid value "loud" for flag -log-level: unknown level "loud" (debug, info, warn or error)`},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
	}
	for _, c := range cases {
		code, out, errs := runCmd(c.args...)
		if code != 2 {
			t.Errorf("sluice %v: exit %d, want 2", c.args, code)
		}
		if !strings.Contains(errs, c.want) {
			t.Errorf("sluice %v: stderr %q lacks %q", c.args, errs, c.want)
		}
		if out != "" {
			t.Errorf("sluice %v: stdout %q, want nothing", c.args, out)
		}
	}
	code, _, errs := runCmd("frobnicate")
	if code != 2 || !strings.Contains(errs, "commands:") {
		t.Errorf("unknown command: exit %d, stderr %q; want 2 with the usage", code, errs)
	}
}

func TestHelpAndVersion(t *testing.T) {
	code, out, _ := runCmd("help")
	if code != 0 || !strings.Contains(out, "serve FILE") || !strings.Contains(out, "SLUICE_CONFIG") {
		t.Errorf("help: exit %d, stdout %q", code, out)
	}
	code, out, errs := runCmd("version")
	if code != 0 || !regexp.MustCompile(`^sluice \S+( \(revision [0-9a-f]+(, modified)?\))? go\S+\n$`).MatchString(out) || errs != "" {
		t.Errorf("version: exit %d, stdout %q, stderr %q; want 0 and one line `sluice VERSION [(revision R)] GOVERSION`", code, out, errs)
	}
	for _, flag := range []string{"--version", "-v"} {
		if code, dashed, errs := runCmd(flag); code != 0 || dashed != out || errs != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 0 and what version printed, %q", flag, code, dashed, errs, out)
		}
	}
}

// TestCommandHelp: --help, -h and -help print the command's usage on
// stdout and exit 0.
func TestCommandHelp(t *testing.T) {
	for _, cmd := range []string{"serve", "check"} {
		for _, flag := range []string{"--help", "-h", "-help"} {
			code, out, errs := runCmd(cmd, flag)
			if code != 0 || errs != "" || !strings.HasPrefix(out, "usage: sluice "+cmd+" [--config] FILE") || !strings.Contains(out, "-config") {
				t.Errorf("sluice %s %s: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout", cmd, flag, code, out, errs)
			}
		}
	}
}

// TestFlaglessCommandHelp: demo and version take no flags; --help prints
// their usage (it never starts the demo) and anything else is a usage
// error, exit 2.
func TestFlaglessCommandHelp(t *testing.T) {
	for _, cmd := range []string{"demo", "version"} {
		for _, flag := range []string{"--help", "-h", "-help"} {
			code, out, errs := runCmd(cmd, flag)
			if code != 0 || errs != "" || !strings.HasPrefix(out, "usage: sluice "+cmd+"\n") {
				t.Errorf("sluice %s %s: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout", cmd, flag, code, out, errs)
			}
		}
		code, out, errs := runCmd(cmd, "--config", "x.yaml")
		if code != 2 || out != "" || !strings.Contains(errs, "usage: sluice "+cmd+"\n") {
			t.Errorf("sluice %s --config x.yaml: exit %d, stdout %q, stderr %q; want 2 and the usage on stderr", cmd, code, out, errs)
		}
	}
	for _, story := range []string{"overload", "carbon"} {
		if code, out, errs := runCmd("demo", story, "--help"); code != 0 || errs != "" || !strings.HasPrefix(out, "usage: sluice demo "+story+"\n") {
			t.Errorf("sluice demo %s --help: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout", story, code, out, errs)
		}
		if code, out, errs := runCmd("demo", story, "x"); code != 2 || out != "" || !strings.Contains(errs, "usage: sluice demo "+story+"\n") {
			t.Errorf("sluice demo %s x: exit %d, stdout %q, stderr %q; want 2 and the usage on stderr", story, code, out, errs)
		}
	}
}

// TestVersionRevision: a binary built from a git checkout names the commit
// it was built from, as the go command recorded it (it records none with
// -buildvcs=false, outside a checkout, or in a git worktree).
func TestVersionRevision(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sluice")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Skipf("go build -buildvcs=true: %v\n%s", err, out) // not a checkout the go command can read
	}
	info, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\bvcs\.revision=([0-9a-f]+)`).FindSubmatch(info)
	if m == nil {
		t.Skip("the go command recorded no revision (a git worktree?)")
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "(revision " + string(m[1]); !strings.Contains(string(out), want) {
		t.Errorf("sluice version = %q, want it to contain %q", out, want)
	}
}

// TestServeBadConfig: serve refuses a bad file with exit 1 and says why in
// JSON lines, one per problem with its position, like its other logs.
func TestServeBadConfig(t *testing.T) {
	path := writeFile(t, "bad.yaml", badConfig)
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	for file, wantLines := range map[string][]float64{path: {1, 2, 5, 6}, missing: nil} {
		code, _, errs := runCmd("serve", "--config", file)
		if code != 1 {
			t.Errorf("serve with %s: exit %d, want 1", file, code)
		}
		seen := map[float64]bool{}
		for _, l := range strings.Split(strings.TrimSuffix(errs, "\n"), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("serve with %s: stderr line is not JSON: %q", file, l)
			}
			if m["level"] != "ERROR" || m["msg"] != "configuration refused" || m["file"] != file || m["err"] == "" {
				t.Errorf("serve with %s: %q, want an ERROR configuration refused line naming the file", file, l)
			}
			line, _ := m["line"].(float64)
			seen[line] = true
		}
		for _, line := range wantLines {
			if !seen[line] {
				t.Errorf("serve with a bad file: no error on line %v; stderr:\n%s", line, errs)
			}
		}
	}
}
