package deploy

import (
	"os"
	"os/exec"
	"testing"

	"go.yaml.in/yaml/v3"
)

// promtool returns promtool's path, or skips the test saying why (make
// deps installs it with Debian's prometheus package).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian's prometheus package; make deps installs it): the alert rules are not checked")
	}
	return p
}

// TestAlertRules: promtool reads the rules (check rules) and their unit
// tests pass (test rules: each alert fires when it should and stays quiet
// when it should not).
func TestAlertRules(t *testing.T) {
	pt := promtool(t)
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(pt, args...)
		cmd.Dir = "prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}

// TestAlertRulesReadLiveSeries: every series an alert reads, with the
// labels it matches and groups by, is in a live sluice's /metrics; an
// alert on a series sluice does not export would never fire.
func TestAlertRulesReadLiveSeries(t *testing.T) {
	b, err := os.ReadFile("prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	live := liveSeries(t)
	n := 0
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			n++
			for _, p := range checkQuery(live, r.Expr) {
				t.Errorf("alert %s: %s", r.Alert, p)
			}
		}
	}
	if n == 0 {
		t.Fatal("alerts.yaml has no rules")
	}
}
