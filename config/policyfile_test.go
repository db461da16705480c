package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/policy"
)

// A rules-only file is whole: no listen, no upstream, no store.
func TestParsePolicyRulesOnly(t *testing.T) {
	pf, err := ParsePolicy("rules.yaml", []byte(`
clients:
  list:
    - { id: partner-a, keys: [key-a], plan: standard }
plans:
  standard: { claims: 50/m }
rules:
  - { name: claims, match: { path: /claims }, rate: 100/m }
  - { name: ping, key: ip, rate: 10/s }
`))
	if err != nil {
		t.Fatal(err)
	}
	if pf.Path != "rules.yaml" || pf.Compiled == nil || pf.Compiled.Rules() != 2 || len(pf.Warnings) != 0 {
		t.Fatalf("%+v", pf)
	}
	if k := pf.Policy.Rules[0].Key.Kind; k != policy.KeyClient { // the default with clients listed
		t.Errorf("rule claims counts by %v, want client", k)
	}
}

// The policy part of a whole sluice file is the policy Parse reads, the
// gateway's settings skipped.
func TestParsePolicyOfWholeFile(t *testing.T) {
	data, err := os.ReadFile("testdata/design.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse("design.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := ParsePolicy("design.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pf.Policy, f.Policy) {
		t.Errorf("ParsePolicy read\n%+v\nParse read\n%+v", pf.Policy, f.Policy)
	}
	// The gateway's settings are not read: a value Parse refuses is skipped.
	if _, err := ParsePolicy("f.yaml", []byte("listen: [not, an, address]\nstore: {type: etcd}\nrules: [{name: a, rate: 1/s}]\n")); err != nil {
		t.Errorf("ParsePolicy read the gateway's settings: %v", err)
	}
}

// Problems are reported as Parse reports them: all at once, at
// file:line:col, with what would be accepted.
func TestParsePolicyErrors(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"empty", "", "rules.yaml: empty file (required: rules)"},
		{"not a mapping", "- a\n", "rules.yaml:1:1: the file must be a mapping of settings (clients, plans, rules, ...), not a list"},
		{"no rules", "plans: {}\n", `rules.yaml:1:1: rules: missing (required; such as rules: [{name: api, rate: 100/m}])`},
		{"misspelt", "rule: []\n", `rules.yaml:1:1: unknown field "rule" (did you mean "rules"?`},
		{"two at once", "rules:\n  - name: a\n    rate: 10/sec\n    mode: dryrun\n",
			"rules.yaml:3:11: rules[0].rate: \"10/sec\": unknown period \"sec\" (s, m, h, d or a Go duration such as 30s, 1500ms or 36h)\n" +
				"rules.yaml:4:11: rules[0].mode: unknown value \"dryrun\" (accepted: enforce, shadow)"},
		{"compile", "rules: [{name: a, rate: 1/s}, {name: a, rate: 2/s}]\n", "rules.yaml:1:"},
	} {
		_, err := ParsePolicy("rules.yaml", []byte(c.text))
		var errs Errors
		if !errors.As(err, &errs) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want Errors starting %q", c.name, err, c.want)
		}
	}
}

func TestLoadPolicy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte("rules: [{name: a, key: global, rate: 1/s}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if pf, err := LoadPolicy(path); err != nil || pf.Path != path || pf.Compiled.Rules() != 1 {
		t.Fatalf("LoadPolicy: %+v, %v", pf, err)
	}
	if _, err := LoadPolicy(path + ".missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzParsePolicy: no input makes ParsePolicy panic; its errors are
// Errors; every file Parse accepts, ParsePolicy accepts with the same
// policy.
func FuzzParsePolicy(f *testing.F) {
	design, err := os.ReadFile("testdata/design.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{string(design), minimal, "", "- a\n", "rules: [{name: a, rate: 1/s}]\n", "a: &a [*a]\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := ParsePolicy("f.yaml", data)
		var errs Errors
		if err != nil && (!errors.As(err, &errs) || len(errs) == 0) {
			t.Fatalf("error %T %v is not Errors", err, err)
		}
		if err == nil && (pf.Compiled == nil || pf.Compiled.Rules() == 0) {
			t.Fatalf("accepted a policy without rules: %+v", pf)
		}
		if file, ferr := Parse("f.yaml", data); ferr == nil && file.Compiled.Rules() > 0 {
			if err != nil || !reflect.DeepEqual(pf.Policy, file.Policy) {
				t.Fatalf("Parse accepts the file, ParsePolicy: %v", err)
			}
		}
	})
}
