package rls

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/internal/rlscompat"
)

// TestCompatTables replays the questions make compat asked about
// envoyproxy/ratelimit's own rule files and wants that service's
// answers (testdata/compat), except where sluice differs on purpose:
//
//   - a hit refused for a hits_addend above the limit spends nothing, so
//     the next single hit passes (that service counted the refused ones);
//   - the refused hit's limit_remaining is what is left, not 0;
//   - an override whose unit is UNKNOWN is refused with InvalidArgument
//     (that service's process stops: the call ends with Unavailable).
//
// Durations are not compared: the answers were recorded at a moment
// within each window, the replay runs at a window's start.
func TestCompatTables(t *testing.T) {
	files, err := filepath.Glob("testdata/compat/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule files in testdata/compat (%v)", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			dom, err := config.ParseEnvoy(file, data)
			if err != nil {
				t.Fatal(err)
			}
			want := readAnswers(t, file+".answers")
			h := start(t, Compile([]config.EnvoyDomain{*dom}))
			n := 0
			for _, q := range rlscompat.Questions(dom) {
				for call := 1; call <= q.Calls; call++ {
					key := q.Name + "\t" + strconv.Itoa(call)
					w, ok := want[key]
					if !ok {
						t.Fatalf("no recorded answer for %q call %d", q.Name, call)
					}
					n++
					resp, err := h.call(q.Req)
					if got := answer(resp, err); !compatible(q.Name, got, w) {
						t.Errorf("%s call %d: sluice %q, envoyproxy/ratelimit %q", q.Name, call, got, w)
					}
				}
			}
			if n != len(want) {
				t.Errorf("asked %d questions, %d recorded", n, len(want))
			}
		})
	}
}

func answer(resp *pb.RateLimitResponse, err error) string {
	if err != nil {
		return "error: " + status.Code(err).String()
	}
	return rlscompat.Brief(resp)
}

// compatible reports whether sluice's answer got matches the recorded
// want, allowing the differences TestCompatTables lists.
func compatible(name, got, want string) bool {
	switch {
	case strings.HasPrefix(want, "error:"):
		return got == "error: "+codes.InvalidArgument.String()
	case strings.HasSuffix(name, " hits_addend 1 after it"):
		return strings.HasPrefix(want, "OVER_LIMIT OVER_LIMIT/0/") && strings.HasPrefix(got, "OK OK/")
	case strings.HasSuffix(name, " hits_addend 1000"):
		return strings.HasPrefix(want, "OVER_LIMIT OVER_LIMIT/") && strings.HasPrefix(got, "OVER_LIMIT OVER_LIMIT/")
	}
	return rlscompat.Alike(got, want, false)
}

// readAnswers reads a recorded table: "question<TAB>call<TAB>answer".
func readAnswers(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			t.Fatalf("%s: bad line %q", path, line)
		}
		out[parts[0]+"\t"+parts[1]] = parts[2]
	}
	return out
}
