// Command compat asks envoyproxy/ratelimit and sluice the same
// ShouldRateLimit questions about one of that service's rule files and
// prints their answers side by side. rls/compat/compat.sh (make compat) starts
// both servers on each of that service's example and test rule files and
// runs it; the answers it established are the tables of rls's
// TestCompatTables, which make test runs without that service.
//
//	compat -rules FILE -envoy 127.0.0.1:8091 -sluice 127.0.0.1:8092
//	compat -check FILE     # only whether sluice reads FILE (exit status 1 and its errors if not)
//
// The questions are made from the file: for each descriptor with a
// rate_limit, its path of entries (a wildcard's '*' written as "x", a key
// without a value given the value "v1"), asked one more time than its
// limit allows (at most 5 times); then a descriptor no rule matches, one
// deeper than the tree, an unknown domain, and the first two limited
// paths in one request.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice-rl/sluice/config"
)

func main() {
	rules := flag.String("rules", "", "the rule file both servers read")
	envoyAddr := flag.String("envoy", "", "envoyproxy/ratelimit's gRPC address")
	sluiceAddr := flag.String("sluice", "", "sluice's decide.grpc address")
	check := flag.String("check", "", "only read this rule file as sluice does")
	flag.Parse()
	if *check != "" {
		if _, err := config.LoadEnvoy([]string{*check}); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		return
	}
	if err := run(*rules, *envoyAddr, *sluiceAddr); err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		os.Exit(1)
	}
}

// question is one request, asked calls times in a row.
type question struct {
	name  string
	req   *pb.RateLimitRequest
	calls int
}

func run(rules, envoyAddr, sluiceAddr string) error {
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
	same, total := 0, 0
	fmt.Printf("%-58s %-4s %-40s %-40s\n", "question ("+dom.Domain+")", "call", "envoyproxy/ratelimit", "sluice")
	for _, q := range questions(dom) {
		for call := 1; call <= q.calls; call++ {
			a, b := ask(envoy, q.req), ask(sluice, q.req)
			mark := "same"
			if !alike(a, b) {
				mark = "DIFFERS"
			} else {
				same++
			}
			total++
			fmt.Printf("%-58s %-4d %-40s %-40s %s\n", clip(q.name, 58), call, a, b, mark)
		}
	}
	fmt.Printf("compat %s: %d answers, %d same, %d differ\n", rules, total, same, total-same)
	return nil
}

func dial(addr string) (pb.RateLimitServiceClient, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	return pb.NewRateLimitServiceClient(conn), nil
}

// ask returns the answer as the rls tests write it (see brief there), or
// the gRPC error.
func ask(c pb.RateLimitServiceClient, req *pb.RateLimitRequest) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.ShouldRateLimit(ctx, req)
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	b.WriteString(resp.GetOverallCode().String())
	for _, st := range resp.GetStatuses() {
		b.WriteString(" " + st.GetCode().String())
		if st.GetCurrentLimit() == nil {
			if st.GetLimitRemaining() != 0 {
				b.WriteString("/unlimited")
			}
			continue
		}
		fmt.Fprintf(&b, "/%d/%ds", st.GetLimitRemaining(), st.GetDurationUntilReset().GetSeconds())
	}
	return b.String()
}

// alike compares two answers, allowing a second's difference in each
// duration: the two servers are asked one after the other.
func alike(a, b string) bool {
	fa, fb := strings.Fields(a), strings.Fields(b)
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		if fa[i] == fb[i] {
			continue
		}
		pa, pb := strings.Split(fa[i], "/"), strings.Split(fb[i], "/")
		if len(pa) != 3 || len(pb) != 3 || pa[0] != pb[0] || pa[1] != pb[1] {
			return false
		}
		da, _ := strconv.Atoi(strings.TrimSuffix(pa[2], "s"))
		db, _ := strconv.Atoi(strings.TrimSuffix(pb[2], "s"))
		if da-db > 1 || db-da > 1 {
			return false
		}
	}
	return true
}

// questions makes the questions of a rule file.
func questions(dom *config.EnvoyDomain) []question {
	var qs []question
	var limited []*rlv3.RateLimitDescriptor
	var keyOnly *rlv3.RateLimitDescriptor // a fresh value under the first limited key-only rule
	var walk func(prefix []*rlv3.RateLimitDescriptor_Entry, descs []config.EnvoyDescriptor)
	walk = func(prefix []*rlv3.RateLimitDescriptor_Entry, descs []config.EnvoyDescriptor) {
		for _, d := range descs {
			v := strings.ReplaceAll(d.Value, "*", "x")
			if v == "" {
				v = "v1"
			}
			entries := append(append([]*rlv3.RateLimitDescriptor_Entry(nil), prefix...), &rlv3.RateLimitDescriptor_Entry{Key: d.Key, Value: v})
			if rl := d.RateLimit; rl != nil {
				calls := 2
				if !rl.Unlimited {
					calls = int(min(rl.RequestsPerUnit, 4)) + 1
				}
				desc := &rlv3.RateLimitDescriptor{Entries: entries}
				qs = append(qs, question{name: name(entries), req: req(dom.Domain, desc), calls: calls})
				limited = append(limited, desc)
				if d.Value == "" && !rl.Unlimited && rl.RequestsPerUnit > 0 && keyOnly == nil {
					fresh := append(entries[:len(entries)-1:len(entries)-1], &rlv3.RateLimitDescriptor_Entry{Key: d.Key, Value: "fresh"})
					keyOnly = &rlv3.RateLimitDescriptor{Entries: fresh}
				}
				if len(d.Descriptors) == 0 {
					deeper := &rlv3.RateLimitDescriptor{Entries: append(entries[:len(entries):len(entries)], &rlv3.RateLimitDescriptor_Entry{Key: "deeper", Value: "1"})}
					qs = append(qs, question{name: name(deeper.Entries), req: req(dom.Domain, deeper), calls: 1})
				}
			}
			walk(entries, d.Descriptors)
		}
	}
	walk(nil, dom.Descriptors)
	none := &rlv3.RateLimitDescriptor{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "no_rule", Value: "1"}}}
	qs = append(qs, question{name: "no_rule=1", req: req(dom.Domain, none), calls: 1},
		question{name: "unknown domain", req: req("compat-unknown-domain", none), calls: 1})
	if len(limited) >= 2 {
		qs = append(qs, question{name: "both: " + name(limited[0].Entries) + " + " + name(limited[1].Entries),
			req: req(dom.Domain, limited[0], limited[1]), calls: 2})
	}
	return append(qs, extras(dom.Domain, keyOnly)...)
}

// extras are the questions where the two are known to differ or may:
// a descriptor's own limit, hits_addend above the limit then 1, and last
// (it may stop a server) an override whose unit is UNKNOWN.
func extras(domain string, keyOnly *rlv3.RateLimitDescriptor) []question {
	fresh := &rlv3.RateLimitDescriptor{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "no_rule", Value: "override"}},
		Limit: &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2, Unit: typev3.RateLimitUnit_HOUR}}
	qs := []question{{name: "no_rule=override with limit 2/HOUR", req: req(domain, fresh), calls: 3}}
	if keyOnly != nil {
		big := req(domain, keyOnly)
		big.HitsAddend = 1000
		n := name(keyOnly.Entries)
		qs = append(qs, question{name: n + " hits_addend 1000", req: big, calls: 1},
			question{name: n + " hits_addend 1 after it", req: req(domain, keyOnly), calls: 1})
	}
	unknown := &rlv3.RateLimitDescriptor{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "no_rule", Value: "unknown-unit"}},
		Limit: &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1}}
	return append(qs, question{name: "override with unit UNKNOWN (last)", req: req(domain, unknown), calls: 1})
}

func req(domain string, descs ...*rlv3.RateLimitDescriptor) *pb.RateLimitRequest {
	return &pb.RateLimitRequest{Domain: domain, Descriptors: descs}
}

func name(entries []*rlv3.RateLimitDescriptor_Entry) string {
	parts := make([]string, len(entries))
	for i, e := range entries {
		parts[i] = e.GetKey() + "=" + e.GetValue()
	}
	return strings.Join(parts, ",")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
