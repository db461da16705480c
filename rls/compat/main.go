// Command compat asks envoyproxy/ratelimit and sluice the same
// ShouldRateLimit questions about one of that service's rule files and
// prints their answers side by side. rls/compat/compat.sh (make compat) starts
// both servers on each of that service's example and test rule files and
// runs it; with -record it writes envoyproxy/ratelimit's answers as a
// table, which rls's TestCompatTables replays against sluice in make
// test (rls/testdata/compat), without that service.
//
//	compat -rules FILE -envoy 127.0.0.1:8091 -sluice 127.0.0.1:8092
//	compat -rules FILE ... -record rls/testdata/compat/FILE.answers
//	compat -check FILE     # only whether sluice reads FILE (exit status 1 and its errors if not)
//
// The questions are made from the file (internal/rlscompat): for each
// descriptor with a rate_limit, its path of entries (a wildcard's '*'
// written as "x", a key without a value given the value "v1"), asked one
// more time than its limit allows (at most 5 times), and one deeper than
// the tree; then a descriptor no rule matches, an unknown domain, the
// first two limited paths in one request, a descriptor's own limit,
// hits_addend above a limit then 1, and an override whose unit is UNKNOWN.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/internal/rlscompat"
)

func main() {
	rules := flag.String("rules", "", "the rule file both servers read")
	envoyAddr := flag.String("envoy", "", "envoyproxy/ratelimit's gRPC address")
	sluiceAddr := flag.String("sluice", "", "sluice's decide.grpc address")
	record := flag.String("record", "", "also write envoyproxy/ratelimit's answers to this file, one a line")
	check := flag.String("check", "", "only read this rule file as sluice does")
	flag.Parse()
	if *check != "" {
		if _, err := config.LoadEnvoy([]string{*check}); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		return
	}
	if err := run(*rules, *envoyAddr, *sluiceAddr, *record); err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		os.Exit(1)
	}
}

func run(rules, envoyAddr, sluiceAddr, record string) error {
	data, err := os.ReadFile(rules)
	if err != nil {
		return err
	}
	dom, err := config.ParseEnvoy(rules, data)
	if err != nil {
		return err
	}
	envoy, err := dial(envoyAddr)
	if err != nil {
		return err
	}
	sluice, err := dial(sluiceAddr)
	if err != nil {
		return err
	}
	var rec strings.Builder
	same, total := 0, 0
	fmt.Printf("%-58s %-4s %-40s %-40s\n", "question ("+dom.Domain+")", "call", "envoyproxy/ratelimit", "sluice")
	for _, q := range rlscompat.Questions(dom) {
		for call := 1; call <= q.Calls; call++ {
			a, b := ask(envoy, q.Req), ask(sluice, q.Req)
			mark := "same"
			if rlscompat.Alike(a, b, true) {
				same++
			} else {
				mark = "DIFFERS"
			}
			total++
			fmt.Printf("%-58s %-4d %-40s %-40s %s\n", clip(q.Name, 58), call, a, b, mark)
			fmt.Fprintf(&rec, "%s\t%d\t%s\n", q.Name, call, a)
		}
	}
	fmt.Printf("compat %s: %d answers, %d same, %d differ\n", rules, total, same, total-same)
	if record != "" {
		return os.WriteFile(record, []byte(rec.String()), 0o644)
	}
	return nil
}

func dial(addr string) (pb.RateLimitServiceClient, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	return pb.NewRateLimitServiceClient(conn), nil
}

// ask returns the answer as rlscompat.Brief writes it, or the gRPC error.
func ask(c pb.RateLimitServiceClient, req *pb.RateLimitRequest) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.ShouldRateLimit(ctx, req)
	if err != nil {
		return "error: " + err.Error()
	}
	return rlscompat.Brief(resp)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
