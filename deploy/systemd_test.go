package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/config"
)

const unitFile = "systemd/sluice.service"

// installedSluice is the path the unit starts sluice from.
const installedSluice = "/usr/local/bin/sluice"

// systemdAnalyze returns systemd-analyze's path, or skips the test saying
// why (make deps installs it with Debian's systemd package).
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian's systemd package; make deps installs it): the unit is not verified")
	}
	return p
}

// unitForVerify writes the unit with its sluice path replaced by an
// executable that exists here (this test's own binary): systemd-analyze
// verify refuses a unit whose commands cannot be executed.
func unitForVerify(t *testing.T) string {
	t.Helper()
	text, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), installedSluice) {
		t.Fatalf("%s does not start %s", unitFile, installedSluice)
	}
	p := filepath.Join(t.TempDir(), "sluice.service")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(text), installedSluice, self)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSystemdUnitVerifies: systemd-analyze verify reads the unit without a
// word about it (it only warns of an unknown or misspelt setting, so any
// line naming the unit fails the test), and systemd-analyze security
// rates its hardening at most 2.0 of 10 ("OK").
func TestSystemdUnitVerifies(t *testing.T) {
	sa := systemdAnalyze(t)
	unit := unitForVerify(t)
	out, err := exec.Command(sa, "verify", unit).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze verify %s: %v\n%s", unitFile, err, out)
	}
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "sluice.service") {
			t.Errorf("systemd-analyze verify %s: %s", unitFile, strings.TrimSpace(line))
		} else {
			t.Logf("systemd-analyze verify (about this machine, not the unit): %s", strings.TrimSpace(line))
		}
	}
	out, err = exec.Command(sa, "security", "--offline=yes", "--threshold=20", unit).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security --threshold=20 %s: %v\n%s", unitFile, err, out)
	}
}

// TestSystemdUnitSettings: what systemd-analyze cannot know — the unit
// serves and checks the same file, reloads with SIGHUP, runs as its own
// user, and gives a drain with the default shutdown_delay and
// drain_timeout time to end before systemd kills it.
func TestSystemdUnitSettings(t *testing.T) {
	s := unitSettings(t)
	const file = " --config /etc/sluice/sluice.yaml"
	if s["ExecStart"] != installedSluice+" serve"+file || s["ExecStartPre"] != installedSluice+" check"+file {
		t.Errorf("ExecStart=%q ExecStartPre=%q: want sluice serve and check of one file", s["ExecStart"], s["ExecStartPre"])
	}
	if s["ExecReload"] != "/bin/kill -HUP $MAINPID" {
		t.Errorf("ExecReload=%q, want SIGHUP", s["ExecReload"])
	}
	if s["User"] == "" || s["User"] == "root" {
		t.Errorf("User=%q, want a user of its own", s["User"])
	}
	stop, err := time.ParseDuration(s["TimeoutStopSec"])
	if err != nil {
		t.Fatalf("TimeoutStopSec=%q: %v", s["TimeoutStopSec"], err)
	}
	if drain := config.DefaultServer().ShutdownDelay + config.DefaultServer().DrainTimeout; stop <= drain {
		t.Errorf("TimeoutStopSec=%v, want above the default shutdown_delay + drain_timeout (%v)", stop, drain)
	}
}

// unitSettings reads the unit's settings, the last one of each name.
func unitSettings(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			s[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}
