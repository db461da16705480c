package deploy

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/demo"
)

// instruction is one Dockerfile instruction: its keyword and the rest,
// continuation lines joined.
type instruction struct{ op, args string }

// stage is one FROM of a Dockerfile and its instructions.
type stage struct {
	from, name string
	steps      []instruction
}

func readDockerfile(t *testing.T) []stage {
	t.Helper()
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	var stages []stage
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, args, _ := strings.Cut(line, " ")
		op = strings.ToUpper(op)
		if op == "FROM" {
			from, name, _ := strings.Cut(args, " AS ")
			stages = append(stages, stage{from: strings.TrimSpace(from), name: strings.TrimSpace(name)})
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("Dockerfile: %s before any FROM", op)
		}
		stages[len(stages)-1].steps = append(stages[len(stages)-1].steps, instruction{op, strings.TrimSpace(args)})
	}
	return stages
}

// last returns the args of stage s's last instruction op, "" if none.
func (s stage) last(op string) string {
	for i := len(s.steps) - 1; i >= 0; i-- {
		if s.steps[i].op == op {
			return s.steps[i].args
		}
	}
	return ""
}

// TestDockerfile: the image is built in a stage of its own with make build
// (static, -trimpath, versioned) and shipped on an empty base (scratch)
// as a numeric non-root user, its entrypoint sluice serve; what its COPY
// --from lines take, the build stage makes. Building the image needs a
// container engine: TestContainerImage.
func TestDockerfile(t *testing.T) {
	stages := readDockerfile(t)
	if len(stages) < 2 {
		t.Fatalf("Dockerfile: %d stages, want a build stage and the image", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]
	if build.name != "build" || !strings.Contains(build.last("RUN"), "make build") {
		t.Errorf("Dockerfile: first stage %q runs %q, want stage build running make build", build.name, build.last("RUN"))
	}
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "CGO_ENABLED=0 $(GO) build -trimpath") || !strings.Contains(string(mk), "-o bin/sluice ./cmd/sluice") {
		t.Error("Makefile: make build no longer builds a static -trimpath bin/sluice, which the Dockerfile copies")
	}
	for _, s := range stages[1:] {
		user := s.last("USER")
		if s.from != "scratch" || user == "" || strings.HasPrefix(user, "0") || strings.Trim(user, "0123456789:") != "" {
			t.Errorf("Dockerfile: stage %q from %q as user %q, want scratch and a numeric user other than root", s.name, s.from, user)
		}
		for _, st := range s.steps {
			if st.op == "COPY" && strings.HasPrefix(st.args, "--from=build /src/bin/") {
				bin := strings.Fields(st.args)[1]
				if !strings.Contains(build.last("RUN"), "bin/"+filepath.Base(bin)) && bin != "/src/bin/sluice" {
					t.Errorf("Dockerfile: stage %q copies %s, which the build stage does not make", s.name, bin)
				}
			}
		}
	}
	var entry, cmd []string
	if err := json.Unmarshal([]byte(final.last("ENTRYPOINT")), &entry); err != nil {
		t.Fatalf("Dockerfile: ENTRYPOINT %q is not the exec form: %v", final.last("ENTRYPOINT"), err)
	}
	if err := json.Unmarshal([]byte(final.last("CMD")), &cmd); err != nil {
		t.Fatalf("Dockerfile: CMD %q is not the exec form: %v", final.last("CMD"), err)
	}
	if !slices.Equal(entry, []string{"/usr/local/bin/sluice", "serve"}) || !slices.Equal(cmd, []string{"--config", "/etc/sluice/sluice.yaml"}) {
		t.Errorf("Dockerfile: ENTRYPOINT %v CMD %v, want sluice serve --config /etc/sluice/sluice.yaml", entry, cmd)
	}
}

// TestContainerImage builds the image and runs sluice version in it where
// a Docker engine answers. This machine has none; podman from Debian
// builds images here but cannot run them.
func TestContainerImage(t *testing.T) {
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skip("no Docker engine answers here (docker info: " + err.Error() + "): the image is not built; " +
			"TestDockerfile checks the Dockerfile, TestCompose the compose file")
	}
	tag := "sluice-test:" + time.Now().Format("20060102150405")
	if out, err := exec.Command("docker", "build", "-t", tag, "..").CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", tag).Run() })
	out, err := exec.Command("docker", "run", "--rm", "--read-only", "--entrypoint", "/usr/local/bin/sluice", tag, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "sluice v") {
		t.Errorf("docker run %s version: %q, %v; want its version", tag, out, err)
	}
}

// composeFile is the part of a compose file compose.yaml uses; decoded
// with unknown fields refused.
type composeFile struct {
	Name     string
	XSluice  any `yaml:"x-sluice"` // the anchor the sluice services merge
	Services map[string]struct {
		Build *struct {
			Context string
			Target  string
		}
		Image           string
		Command         []string
		ReadOnly        bool     `yaml:"read_only"`
		User            string   `yaml:"user"`
		CapDrop         []string `yaml:"cap_drop"`
		SecurityOpt     []string `yaml:"security_opt"`
		Environment     map[string]string
		Volumes         []string
		Tmpfs           []string
		DependsOn       []string `yaml:"depends_on"`
		Ports           []string
		StopGracePeriod string `yaml:"stop_grace_period"`
		Restart         string
	}
}

// TestCompose: compose.yaml runs Redis, the demo's claims service and two
// sluice instances built from the Dockerfile, read-only and without
// capabilities; their configuration passes sluice check and names the
// compose file's Redis and claims services; the stop grace outlasts the
// drain.
func TestCompose(t *testing.T) {
	b, err := os.ReadFile("compose/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cf); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	targets := map[string]bool{"": true}
	for _, s := range readDockerfile(t) {
		targets[s.name] = true
	}
	t.Setenv("SLUICE_ADMIN_TOKEN", "compose-test-admin-token-4c1d")
	cfg, err := config.Load("compose/sluice.yaml")
	if err != nil {
		t.Fatalf("sluice check of compose/sluice.yaml: %v", err)
	}
	if len(cfg.Warnings) > 0 {
		t.Errorf("sluice check of compose/sluice.yaml: warnings %v", cfg.Warnings)
	}
	var sluices int
	for name, s := range cf.Services {
		if !s.ReadOnly || !slices.Contains(s.CapDrop, "ALL") || !slices.Contains(s.SecurityOpt, "no-new-privileges:true") {
			t.Errorf("service %s: read_only %v, cap_drop %v, security_opt %v; want read-only, no capabilities, no new privileges", name, s.ReadOnly, s.CapDrop, s.SecurityOpt)
		}
		if s.Build != nil && (s.Build.Context != "../.." || !targets[s.Build.Target]) {
			t.Errorf("service %s: build %+v, want the repository's Dockerfile and one of its stages", name, *s.Build)
		}
		if !slices.Contains(s.Volumes, "./sluice.yaml:/etc/sluice/sluice.yaml:ro") {
			continue
		}
		sluices++
		grace, err := time.ParseDuration(s.StopGracePeriod)
		if err != nil || grace <= cfg.Server.ShutdownDelay+cfg.Server.DrainTimeout {
			t.Errorf("service %s: stop_grace_period %q, want above shutdown_delay + drain_timeout", name, s.StopGracePeriod)
		}
		if s.Build == nil || s.Build.Target != "" || !slices.Contains(s.DependsOn, "redis") || s.Environment["SLUICE_ADMIN_TOKEN"] == "" {
			t.Errorf("service %s: want the image's default target, depending on redis, with the admin token", name)
		}
	}
	if sluices != 2 {
		t.Errorf("compose.yaml: %d sluice services, want 2", sluices)
	}
	redisHost, _, _ := net.SplitHostPort(cfg.Store.Redis.Addrs[0])
	if _, ok := cf.Services[redisHost]; !ok || cfg.Store.Instances != sluices {
		t.Errorf("compose/sluice.yaml: Redis %s, instances %d; want a service of compose.yaml and %d", redisHost, cfg.Store.Instances, sluices)
	}
	if c, ok := cf.Services[cfg.Upstream.Hostname()]; !ok || c.Build == nil || c.Build.Target != "claims" {
		t.Errorf("compose/sluice.yaml: upstream %s, want compose.yaml's claims service", cfg.Upstream)
	}
}

// TestClaimsService: the compose file's upstream answers a partner its own
// claims and refuses the other's, as in sluice demo.
func TestClaimsService(t *testing.T) {
	srv := httptest.NewServer(demo.ClaimsService())
	defer srv.Close()
	for _, tc := range []struct {
		partner, claim string
		want           int
	}{{"partner-a", "CLM-1001", 200}, {"partner-b", "CLM-1001", 403}, {"", "CLM-1001", 401}} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/claims/"+tc.claim, nil)
		req.Header.Set("X-Sluice-Client", tc.partner)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s GET /claims/%s: %d, want %d", tc.partner, tc.claim, resp.StatusCode, tc.want)
		}
	}
}
