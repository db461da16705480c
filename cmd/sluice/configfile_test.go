package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigFileFound: check reads the file given as its argument as it
// reads --config FILE, flags before or after it; without one, the file
// $SLUICE_CONFIG names, else ./sluice.yaml.
func TestConfigFileFound(t *testing.T) {
	path := writeFile(t, "good.yaml", goodConfig)
	_, want, _ := runCmd("check", "--config", path)
	if !strings.HasPrefix(want, path+": ok:") {
		t.Fatalf("check --config: %q", want)
	}
	if code, out, errs := runCmd("check", path); code != 0 || errs != "" || out != want {
		t.Errorf("check FILE: exit %d, stdout %q, stderr %q; want what check --config FILE printed", code, out, errs)
	}
	// Flags after the file are flags too.
	if code, out, errs := runCmd("check", path, "--explain", "GET /claims/1", "--key", "key-a"); code != 0 || errs != "" || !strings.Contains(out, `"claims"`) {
		t.Errorf("check FILE --explain: exit %d, stdout %q, stderr %q; want 0 and the explanation", code, out, errs)
	}

	t.Setenv("SLUICE_CONFIG", path)
	if code, out, _ := runCmd("check"); code != 0 || out != want {
		t.Errorf("check with SLUICE_CONFIG: exit %d, stdout %q, want %q", code, out, want)
	}
	t.Setenv("SLUICE_CONFIG", "")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sluice.yaml"), []byte(goodConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if code, out, errs := runCmd("check"); code != 0 || !strings.HasPrefix(out, "sluice.yaml: ok:") {
		t.Errorf("check beside ./sluice.yaml: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	t.Setenv("SLUICE_CONFIG", filepath.Join(dir, "other.yaml")) // named: used, even though it is missing
	if code, _, errs := runCmd("check"); code != 1 || !strings.Contains(errs, "other.yaml") {
		t.Errorf("check with SLUICE_CONFIG naming a missing file: exit %d, stderr %q, want 1 naming it", code, errs)
	}
}

// TestCheckFormatJSON: --format json prints the errors, or the warnings,
// as a JSON array on stdout ([] for none), with the exit status of the
// text form.
func TestCheckFormatJSON(t *testing.T) {
	decode := func(out string) []problem {
		t.Helper()
		var ps []problem
		if err := json.Unmarshal([]byte(out), &ps); err != nil {
			t.Fatalf("not a JSON array of problems: %v\n%s", err, out)
		}
		return ps
	}
	bad := writeFile(t, "bad.yaml", badConfig)
	code, out, errs := runCmd("check", "--format", "json", bad)
	if code != 1 || errs != "" {
		t.Errorf("bad file: exit %d, stderr %q; want 1 and nothing on stderr", code, errs)
	}
	ps := decode(out)
	if len(ps) != 4 {
		t.Fatalf("bad file: %d problems, want 4: %s", len(ps), out)
	}
	want := problem{File: bad, Line: 1, Col: 9, Field: "listen", Severity: "error"}
	if got := ps[0]; got.File != want.File || got.Line != want.Line || got.Col != want.Col || got.Field != want.Field ||
		got.Severity != want.Severity || got.Message == "" || strings.HasPrefix(got.Message, "listen:") {
		t.Errorf("first problem %+v, want %+v with the message alone", got, want)
	}

	warn := writeFile(t, "warn.yaml", goodConfig+"trusted_proxies: [0.0.0.0/0]\n")
	code, out, errs = runCmd("check", warn, "--format", "json")
	if ps := decode(out); code != 0 || errs != "" || len(ps) != 1 || ps[0].Severity != "warning" || ps[0].Field != "trusted_proxies[0]" || ps[0].Line != 16 {
		t.Errorf("warning: exit %d, stderr %q, problems %+v; want 0 and the one warning at trusted_proxies[0]", code, errs, ps)
	}

	good := writeFile(t, "good.yaml", goodConfig)
	if code, out, _ := runCmd("check", "--format", "json", good); code != 0 || out != "[]\n" {
		t.Errorf("good file: exit %d, stdout %q; want 0 and []", code, out)
	}
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	code, out, _ = runCmd("check", "--format", "json", missing)
	if ps := decode(out); code != 1 || len(ps) != 1 || ps[0].File != missing || ps[0].Severity != "error" {
		t.Errorf("missing file: exit %d, problems %+v; want 1 and one error naming it", code, ps)
	}
}
