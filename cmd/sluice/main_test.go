package main

import (
	"bytes"
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
	build := exec.Command("go", "build", "-o", binary, ".")
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

func TestCheckGood(t *testing.T) {
	path := writeFile(t, "good.yaml", goodConfig)
	code, out, errs := runCmd("check", "--config", path)
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, errs)
	}
	if errs != "" {
		t.Errorf("stderr not empty:\n%s", errs)
	}
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Errorf("want a one-line summary, got:\n%s", out)
	}
	for _, want := range []string{path, "ok", "2 rules", "2 clients", "127.0.0.1:8080", "http://127.0.0.1:9000", "memory"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary %q lacks %q", out, want)
		}
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
	cases := []struct {
		args []string
		want string // on stderr
	}{
		{nil, "usage: sluice"},
		{[]string{"check"}, "usage: sluice check --config FILE"},
		{[]string{"check", "--config"}, "flag needs an argument"},
		{[]string{"check", "--config", "a.yaml", "extra"}, "usage: sluice check --config FILE"},
		{[]string{"check", "--nope"}, "flag provided but not defined"},
		{[]string{"serve"}, "usage: sluice serve --config FILE"},
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
	if code != 0 || !strings.Contains(out, "serve --config FILE") {
		t.Errorf("help: exit %d, stdout %q", code, out)
	}
	code, out, errs := runCmd("version")
	if code != 0 || !regexp.MustCompile(`^sluice \S+\n$`).MatchString(out) || errs != "" {
		t.Errorf("version: exit %d, stdout %q, stderr %q; want 0 and one line `sluice VERSION`", code, out, errs)
	}
}

func TestServeBadConfig(t *testing.T) {
	path := writeFile(t, "bad.yaml", badConfig)
	code, _, errs := runCmd("serve", "--config", path)
	if code != 1 {
		t.Errorf("serve with a bad file: exit %d, want 1", code)
	}
	if !strings.Contains(errs, path+":1:") {
		t.Errorf("serve with a bad file: stderr lacks FILE:line:col errors:\n%s", errs)
	}
}
