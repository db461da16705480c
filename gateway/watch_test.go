package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// watch runs g.WatchConfig until the test ends and checks that it returns
// nil once its context is cancelled.
func (h *harness) watch() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.g.WatchConfig(ctx, 50*time.Millisecond) }()
	h.t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				h.t.Errorf("WatchConfig returned %v, want nil", err)
			}
		case <-time.After(5 * time.Second):
			h.t.Error("WatchConfig did not return after its context ended")
		}
	})
}

// changeUntil makes a change and polls for its effect, making it again
// every 500ms (a watcher that started a moment ago may have missed the
// first event), for at most 5s. It asserts no timing.
func changeUntil(t *testing.T, what string, change func(), done func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		change()
		for again := time.Now().Add(500 * time.Millisecond); time.Now().Before(again); {
			if done() {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Fatalf("gave up waiting: %s", what)
}

// policyIs reports whether GET /claims for partner-a is answered under the
// claims limit q.
func (h *harness) policyIs(q string) bool {
	return h.get("/claims/1", keyA).Header.Get("RateLimit-Policy") == `"claims";q=`+q+`;w=60`
}

// TestWatchConfigReloadsOnReplace: replacing the file (temp file + rename)
// puts the new policy in force; a broken replacement is refused and the
// policy stays.
func TestWatchConfigReloadsOnReplace(t *testing.T) {
	h := startGateway(t, standardConfig)
	h.watch()
	if !h.policyIs("100") {
		t.Fatal("initial policy not in force")
	}
	changeUntil(t, "the rewritten file's policy (q=2)", func() { h.writeConfig(lowerLimit) }, func() bool { return h.policyIs("2") })

	h.writeConfig("rules: [oops\n")
	eventually(t, "a failed reload to be counted", func() bool {
		return metric(h.metrics(), "sluice_reloads_total", "result=failed") >= 1
	})
	if !h.policyIs("2") {
		t.Error("a broken file replaced the policy in force")
	}
}

// TestWatchConfigReloadsOnWriteInPlace: a file written in place (truncate
// and write, as `>` in a shell does) is reloaded too.
func TestWatchConfigReloadsOnWriteInPlace(t *testing.T) {
	h := startGateway(t, standardConfig)
	h.watch()
	data := strings.ReplaceAll(lowerLimit, "{{UPSTREAM}}", h.up.srv.URL)
	changeUntil(t, "the rewritten file's policy (q=2)", func() {
		if err := os.WriteFile(h.path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}, func() bool { return h.policyIs("2") })
}

// TestWatchConfigConfigMapSwap: Kubernetes mounts a ConfigMap as
// sluice.yaml -> ..data/sluice.yaml with ..data -> ..<timestamp>, and
// updates it by swapping the ..data link; sluice.yaml itself never changes.
// The reload documentation promises that config-map updates are picked up.
func TestWatchConfigConfigMapSwap(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	write := func(version, cfg string) {
		t.Helper()
		vdir := filepath.Join(dir, "..v"+version)
		if err := os.Mkdir(vdir, 0o700); err != nil {
			t.Fatal(err)
		}
		cfg = strings.ReplaceAll(cfg, "{{UPSTREAM}}", h.up.srv.URL)
		if err := os.WriteFile(filepath.Join(vdir, "sluice.yaml"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink("..v"+version, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	write("1", standardConfig)
	if err := os.Symlink(filepath.Join("..data", "sluice.yaml"), filepath.Join(dir, "sluice.yaml")); err != nil {
		t.Fatal(err)
	}
	h.path = filepath.Join(dir, "sluice.yaml")
	h.serve()
	if !h.policyIs("100") {
		t.Fatal("initial policy not in force")
	}
	h.watch()
	version := 1
	changeUntil(t, "the swapped ConfigMap's policy (q=2)", func() {
		version++
		write(strconv.Itoa(version), lowerLimit)
	}, func() bool { return h.policyIs("2") })
}
