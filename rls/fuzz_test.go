package rls

import (
	"context"
	"math"
	"strings"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/store/memory"
)

// FuzzShouldRateLimit checks that no request makes the handler panic,
// that a refusal is InvalidArgument, and that an answer has one status per
// descriptor, OVER_LIMIT overall only with a descriptor OVER_LIMIT, and
// a remaining never above the limit (unless unlimited). The request is
// spelt "domain|k=v,k=v;k=v|hits": descriptors separated by ';', and an
// entry's value "@N/U" makes it a limit override of N per unit U.
func FuzzShouldRateLimit(f *testing.F) {
	for _, seed := range []string{
		"rl|foo=x|0", "rl|foo=x;foo=x;foo=x|2", "rl|source_cluster=proxy,destination_cluster=mock|1",
		"rl|foo=x,bar=bkthomps;category=account|1", "rl|path=/api/a*b|1", "rl|foo=@3/2|1", "rl|x=@0/9|1",
		"|foo=x|1", "rl||1", "rl|=;=|0", "nope|foo=x|4294967295", "rl|banned=1,x=y|1",
	} {
		f.Add(seed)
	}
	clk := clock.NewFake(epoch)
	st := memory.New(memory.Options{Clock: clk, MaxKeys: 10000})
	defer st.Close()
	srv, err := NewServer(Options{Store: st, Clock: clk, Rules: rulesFrom(f, rlRules)})
	if err != nil {
		f.Fatal(err)
	}
	defer srv.Stop() // its stream workers run from NewServer on
	f.Fuzz(func(t *testing.T, spec string) {
		req := parseSpec(spec)
		resp, err := srv.ShouldRateLimit(context.Background(), req)
		if err != nil {
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("%q: %v, want InvalidArgument", spec, err)
			}
			return
		}
		if len(resp.GetStatuses()) != len(req.GetDescriptors()) {
			t.Fatalf("%q: %d statuses for %d descriptors", spec, len(resp.GetStatuses()), len(req.GetDescriptors()))
		}
		anyOver := false
		for _, s := range resp.GetStatuses() {
			anyOver = anyOver || s.GetCode() == pb.RateLimitResponse_OVER_LIMIT
			if l := s.GetCurrentLimit(); l != nil && s.GetLimitRemaining() > l.GetRequestsPerUnit() && s.GetLimitRemaining() != math.MaxUint32 {
				t.Fatalf("%q: remaining %d above the limit %d", spec, s.GetLimitRemaining(), l.GetRequestsPerUnit())
			}
		}
		if resp.GetOverallCode() == pb.RateLimitResponse_OVER_LIMIT && !anyOver {
			t.Fatalf("%q: OVER_LIMIT with no descriptor over", spec)
		}
	})
}

// parseSpec reads FuzzShouldRateLimit's request spelling.
func parseSpec(spec string) *pb.RateLimitRequest {
	domain, rest, _ := strings.Cut(spec, "|")
	descs, hits, _ := strings.Cut(rest, "|")
	req := &pb.RateLimitRequest{Domain: domain}
	for h := range strings.SplitSeq(hits, "") {
		req.HitsAddend = req.HitsAddend*10 + uint32(h[0]%10)
	}
	for _, ds := range strings.Split(descs, ";") {
		d := &rlv3.RateLimitDescriptor{}
		for _, e := range strings.Split(ds, ",") {
			k, v, _ := strings.Cut(e, "=")
			if n, u, ok := strings.Cut(strings.TrimPrefix(v, "@"), "/"); ok && strings.HasPrefix(v, "@") {
				rpu := uint32(0)
				for _, c := range n {
					rpu = rpu*10 + uint32(c%10)
				}
				d.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: rpu, Unit: typev3.RateLimitUnit(len(u) % 8)}
				if len(u) > 2 {
					d.HitsAddend = wrapperspb.UInt64(uint64(len(u)))
				}
			}
			d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: k, Value: v})
		}
		req.Descriptors = append(req.Descriptors, d)
	}
	return req
}
