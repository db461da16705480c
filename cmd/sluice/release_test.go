package main

import (
	"bufio"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// moduleRoot is the checkout's root, where the Makefile and go.mod are.
const moduleRoot = "../.."

// TestGoInstall installs the command as the README's install line does
// (`go install github.com/sluice-rl/sluice/cmd/sluice@latest`, here from
// the checkout, into a GOBIN of its own) and runs `sluice version` and
// `sluice --version`: a binary named sluice that names its version and the
// Go that built it. CGO_ENABLED=0 and -trimpath, as TestMain builds, only
// so that it reuses what TestMain compiled.
func TestGoInstall(t *testing.T) {
	gobin := t.TempDir()
	install := exec.Command("go", "install", "-trimpath", "./cmd/sluice")
	install.Dir = moduleRoot
	install.Env = append(os.Environ(), "GOBIN="+gobin, "CGO_ENABLED=0")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install ./cmd/sluice: %v\n%s", err, out)
	}
	bin := filepath.Join(gobin, "sluice")
	want := regexp.MustCompile(`^sluice \S+( \(revision [0-9a-f]+(, modified)?\))? ` + regexp.QuoteMeta(runtime.Version()) + `\n$`)
	var first string
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil || !want.Match(out) {
			t.Errorf("installed sluice %s: %q, %v; want `sluice VERSION [(revision R)] %s`", arg, out, err, runtime.Version())
		}
		if first == "" {
			first = string(out)
		} else if string(out) != first {
			t.Errorf("sluice --version = %q, sluice version = %q: want the same", out, first)
		}
	}
}

// TestMakeRelease builds one platform of `make release` (this machine's,
// so that it also runs) with a version given by hand, and checks what the
// target promises: a static binary built with -trimpath and without cgo,
// its SHA-256 in SHA256SUMS, and the version and revision the Makefile set
// with -ldflags -X named by `sluice version` and by sluice_build_info,
// although the go command recorded neither (-buildvcs=false, a worktree).
func TestMakeRelease(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed: make release cannot be run here")
	}
	if runtime.GOOS != "linux" {
		t.Skipf("the release test reads ELF binaries; this is %s", runtime.GOOS)
	}
	const version = "v9.8.7-releasetest"
	dist := t.TempDir()
	revision := "" // the Makefile's: git rev-parse HEAD, when git can read the checkout
	if out, err := exec.Command("git", "-C", moduleRoot, "rev-parse", "HEAD").Output(); err == nil {
		revision = strings.TrimSpace(string(out))
	}
	mk := exec.Command("make", "-s", "-C", moduleRoot, "release", "VERSION="+version, "DIST="+dist, "PLATFORMS=linux/"+runtime.GOARCH)
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	name := "sluice-" + version + "-linux-" + runtime.GOARCH
	bin := filepath.Join(dist, name)
	checkSum(t, dist, name)
	checkStatic(t, bin)

	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", name, err)
	}
	want := "sluice " + version + " "
	if revision != "" {
		want += "(revision " + revision // ", modified)" or ")": the checkout under test may have changes
	}
	if !strings.HasPrefix(string(out), want) || !strings.HasSuffix(string(out), " "+runtime.Version()+"\n") {
		t.Errorf("%s version = %q, want %q... %s", name, out, want, runtime.Version())
	}

	p := startServeBinary(t, bin, writeFile(t, "sluice.yaml", serveConfigText("http://127.0.0.1:9", "10/m")))
	metrics := fetch(t, &http.Client{Timeout: 10 * time.Second}, http.MethodGet, "http://"+p.admin+"/metrics", "").body
	series := `sluice_build_info{goversion="` + runtime.Version() + `",revision="` + revision + `",version="` + version + `"} 1`
	if !strings.Contains(metrics, series) {
		t.Errorf("/metrics has no %s:\n%s", series, grepLines(metrics, "sluice_build_info"))
	}
}

// checkSum checks that dist/SHA256SUMS has name's SHA-256, as sha256sum
// writes it.
func checkSum(t *testing.T, dist, name string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dist, name))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if line := hex.EncodeToString(sum[:]) + "  " + name + "\n"; string(sums) != line {
		t.Errorf("SHA256SUMS = %q, want %q", sums, line)
	}
}

// checkStatic checks that bin needs no dynamic loader or shared library and
// was built with -trimpath and CGO_ENABLED=0.
func checkStatic(t *testing.T, bin string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %v program header: not static", bin, p.Type)
		}
	}
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["-trimpath"] != "true" || settings["CGO_ENABLED"] != "0" {
		t.Errorf("%s built with -trimpath=%q CGO_ENABLED=%q, want true and 0", bin, settings["-trimpath"], settings["CGO_ENABLED"])
	}
}

// grepLines returns text's lines that contain s.
func grepLines(text, s string) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			b.WriteString(sc.Text() + "\n")
		}
	}
	return b.String()
}
