package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	headermutationv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_mutation/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/rls"
	"github.com/sluice-rl/sluice/store/memory"
)

// loadEnvoy reads envoy.yaml into Envoy's bootstrap proto as Envoy reads
// it: YAML as JSON, protojson refusing unknown fields, every typed_config
// resolved to its registered type; then every message, those inside the
// typed configs too, checked by its ValidateAll (Envoy's own constraints:
// required fields, ranges, formats).
func loadEnvoy(t *testing.T) *bootstrapv3.Bootstrap {
	t.Helper()
	b, err := os.ReadFile("envoy/envoy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("envoy.yaml: %v", err)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var bs bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(js, &bs); err != nil {
		t.Fatalf("envoy.yaml is not an Envoy bootstrap: %v", err)
	}
	validateAll(t, "envoy.yaml", &bs)
	return &bs
}

// validateAll calls m's ValidateAll and, for every Any inside it, the
// ValidateAll of the message it holds (a message's own ValidateAll does
// not look inside an Any).
func validateAll(t *testing.T, where string, m proto.Message) {
	t.Helper()
	if v, ok := m.(interface{ ValidateAll() error }); ok {
		if err := v.ValidateAll(); err != nil {
			t.Errorf("%s: %v", where, err)
		}
	}
	eachAny(m.ProtoReflect(), func(a *anypb.Any) {
		inner, err := a.UnmarshalNew()
		if err != nil {
			t.Errorf("%s: %s: %v", where, a.GetTypeUrl(), err)
			return
		}
		validateAll(t, where+": "+a.GetTypeUrl(), inner)
	})
}

// eachAny calls f for each Any set in m, at any depth, without looking
// into the Anys themselves.
func eachAny(m protoreflect.Message, f func(*anypb.Any)) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		visit := func(v protoreflect.Value) {
			msg := v.Message()
			if a, ok := msg.Interface().(*anypb.Any); ok {
				f(a)
				return
			}
			eachAny(msg, f)
		}
		switch {
		case fd.Message() == nil:
		case fd.IsList():
			for i := range v.List().Len() {
				visit(v.List().Get(i))
			}
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool { visit(mv); return true })
			}
		default:
			visit(v)
		}
		return true
	})
}

// envoyParts are the parts of envoy.yaml the rest of the test reads.
type envoyParts struct {
	node       string // node.cluster: what source_cluster sends
	routes     []*routev3.Route
	mutation   *headermutationv3.HeaderMutation
	ratelimits []*ratelimitv3.RateLimit // in filter order
	filters    []string                 // the http_filters' names, in order
	rlsCluster string
	rlsPort    uint32
	rlsHTTP2   bool
}

func envoyPartsOf(t *testing.T, bs *bootstrapv3.Bootstrap) envoyParts {
	t.Helper()
	p := envoyParts{node: bs.GetNode().GetCluster()}
	ls := bs.GetStaticResources().GetListeners()
	if len(ls) != 1 || len(ls[0].GetFilterChains()) != 1 || len(ls[0].GetFilterChains()[0].GetFilters()) != 1 {
		t.Fatalf("envoy.yaml: want one listener with one filter chain of one filter")
	}
	var hcm hcmv3.HttpConnectionManager
	if err := ls[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatalf("envoy.yaml: the listener's filter: %v", err)
	}
	for _, vh := range hcm.GetRouteConfig().GetVirtualHosts() {
		p.routes = append(p.routes, vh.GetRoutes()...)
	}
	for _, f := range hcm.GetHttpFilters() {
		p.filters = append(p.filters, f.GetName())
		msg, err := f.GetTypedConfig().UnmarshalNew()
		if err != nil {
			t.Fatal(err)
		}
		switch c := msg.(type) {
		case *headermutationv3.HeaderMutation:
			p.mutation = c
		case *ratelimitv3.RateLimit:
			p.ratelimits = append(p.ratelimits, c)
			p.rlsCluster = c.GetRateLimitService().GetGrpcService().GetEnvoyGrpc().GetClusterName()
		}
	}
	for _, c := range bs.GetStaticResources().GetClusters() {
		if c.GetName() != p.rlsCluster {
			continue
		}
		p.rlsPort = c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress().GetPortValue()
		var opts upstreamhttpv3.HttpProtocolOptions
		a := c.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
		if a != nil && a.UnmarshalTo(&opts) == nil {
			p.rlsHTTP2 = opts.GetExplicitHttpConfig().GetHttp2ProtocolOptions() != nil
		}
	}
	return p
}

// TestEnvoyConfig: envoy.yaml is a valid Envoy bootstrap; the header
// mutation removing a caller's X-Sluice-Client runs before the rate limit
// filters; each of these asks the cluster that is sluice's decide.grpc
// over HTTP/2 with a timeout, for one of the two domains.
func TestEnvoyConfig(t *testing.T) {
	p := envoyPartsOf(t, loadEnvoy(t))
	if i := slices.Index(p.filters, "envoy.filters.http.header_mutation"); i < 0 || i > slices.Index(p.filters, "envoy.filters.http.ratelimit") ||
		p.filters[len(p.filters)-1] != "envoy.filters.http.router" {
		t.Errorf("http_filters %v: want header_mutation before the ratelimit filters, router last", p.filters)
	}
	removed := false
	for _, m := range p.mutation.GetMutations().GetRequestMutations() {
		removed = removed || strings.EqualFold(m.GetRemove(), "X-Sluice-Client")
	}
	if !removed {
		t.Error("the header mutation does not remove a caller's X-Sluice-Client")
	}
	var domains []string
	for _, rl := range p.ratelimits {
		domains = append(domains, rl.GetDomain()+"/"+strconv.Itoa(int(rl.GetStage())))
		if rl.GetTimeout() == nil || rl.GetTimeout().AsDuration() <= 0 {
			t.Errorf("ratelimit filter of %s: no timeout (Envoy's default 20ms is below a rule's delay)", rl.GetDomain())
		}
	}
	if !slices.Equal(domains, []string{"edge_proxy/0", "sluice/1"}) {
		t.Errorf("ratelimit filters (domain/stage) %v, want edge_proxy/0 and sluice/1", domains)
	}
	cfg := loadEnvoySluice(t)
	if _, port, _ := net.SplitHostPort(cfg.Decide.GRPC); port != strconv.Itoa(int(p.rlsPort)) || !p.rlsHTTP2 {
		t.Errorf("cluster %s: port %d, HTTP/2 %v; want sluice.yaml's decide.grpc (%s) over HTTP/2", p.rlsCluster, p.rlsPort, p.rlsHTTP2, cfg.Decide.GRPC)
	}
}

// loadEnvoySluice loads envoy/sluice.yaml as sluice check does, with the
// access keys its env: references name.
func loadEnvoySluice(t *testing.T) *config.File {
	t.Helper()
	t.Setenv("PARTNER_A_KEY", "envoy-key-a-0d9e4c")
	t.Setenv("PARTNER_B_KEY", "envoy-key-b-77a1f0")
	cfg, err := config.Load("envoy/sluice.yaml")
	if err != nil {
		t.Fatalf("sluice check of envoy/sluice.yaml: %v", err)
	}
	return cfg
}

// envoyRequest is a request as the rate limit filters see it.
type envoyRequest struct {
	remote  string
	headers map[string]string // lower-case names; :method and :path among them
}

// descriptors are what Envoy sends for req on route r to the filter of
// stage: one descriptor per rate_limits entry of that stage, none for an
// entry one of whose actions finds nothing to send (a header missing
// without skip_if_absent). It knows the actions envoy.yaml uses and fails
// the test on any other, so the simulation cannot silently drift from the
// file.
func descriptors(t *testing.T, p envoyParts, r *routev3.Route, stage uint32, req envoyRequest) []*rlv3.RateLimitDescriptor {
	t.Helper()
	var out []*rlv3.RateLimitDescriptor
	for _, rl := range r.GetRoute().GetRateLimits() {
		if rl.GetStage().GetValue() != stage {
			continue
		}
		d, ok := &rlv3.RateLimitDescriptor{}, true
		for _, a := range rl.GetActions() {
			add := func(k, v string) { d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: k, Value: v}) }
			switch {
			case a.GetRemoteAddress() != nil:
				add("remote_address", req.remote)
			case a.GetSourceCluster() != nil:
				add("source_cluster", p.node)
			case a.GetDestinationCluster() != nil:
				add("destination_cluster", r.GetRoute().GetCluster())
			case a.GetRequestHeaders() != nil:
				h := a.GetRequestHeaders()
				v, sent := req.headers[strings.ToLower(h.GetHeaderName())]
				switch {
				case sent:
					add(h.GetDescriptorKey(), v)
				case !h.GetSkipIfAbsent():
					ok = false
				}
			default:
				t.Fatalf("envoy.yaml: route %s: an action the test does not know: %v", r.GetMatch().GetPrefix(), a)
			}
		}
		if ok && len(d.Entries) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// route is the route Envoy picks for path: the first whose prefix matches.
func route(p envoyParts, path string) *routev3.Route {
	for _, r := range p.routes {
		if strings.HasPrefix(path, r.GetMatch().GetPrefix()) {
			return r
		}
	}
	return nil
}

// rlsClient serves sluice's rate limit service as sluice serve does for
// envoy/sluice.yaml — its rule files for edge_proxy, its policy for the
// domain sluice — on a memory store with a clock that does not move, so
// that counts within a window are exact on a loaded machine.
func rlsClient(t *testing.T, cfg *config.File) pb.RateLimitServiceClient {
	t.Helper()
	doms, err := config.LoadEnvoy(cfg.Decide.EnvoyConfig)
	if err != nil {
		t.Fatalf("envoy/ratelimit: %v", err)
	}
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	st := memory.New(memory.Options{Clock: clk})
	e, err := decision.New(decision.Options{Store: st, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	decide := func(ctx context.Context, req decision.Request) *decision.Verdict {
		return e.Decide(ctx, decision.Settings{Policy: cfg.Compiled, LegacyHeaders: cfg.LegacyHeaders}, req)
	}
	srv, err := rls.NewServer(rls.Options{Store: st, OnStoreError: cfg.Store.OnFailure, Rules: rls.Compile(doms), Decide: decide,
		Clock: clk, Registerer: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.GracefulStop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		_ = st.Close()
	})
	return pb.NewRateLimitServiceClient(conn)
}

// TestEnvoyRoutesAgainstSluice sends requests through envoy.yaml's routes
// as Envoy would: each rate limit filter in turn asks sluice with the
// descriptors its stage's actions make of the request, and the first
// OVER_LIMIT answers the request (429) without asking the next. Each row
// is a run of identical requests and what each one got.
func TestEnvoyRoutesAgainstSluice(t *testing.T) {
	p := envoyPartsOf(t, loadEnvoy(t))
	cfg := loadEnvoySluice(t)
	client := rlsClient(t, cfg)
	for _, tc := range []struct {
		name string
		req  envoyRequest
		n    int
		want string // what the requests got, runs of "N×outcome"
	}{
		// Without a key sluice's policy refuses (401, which Envoy answers
		// with its rate_limited_status, 429).
		{"no key", envoyRequest{"192.0.2.3", map[string]string{":method": "GET", ":path": "/api/claims/1"}}, 1, "1×sluice"},
		// rule claims in the domain sluice: 100/m for partner-a's plan.
		{"partner-a reads claims", envoyRequest{"192.0.2.1", map[string]string{":method": "GET", ":path": "/api/claims/7", "x-api-key": "envoy-key-a-0d9e4c"}},
			101, "100×passed 1×sluice"},
		// No rule of sluice's matches reports, so edge_proxy alone limits
		// them: all of /api/ shares 200 a second, and the 102 requests
		// above were counted in it (the clock does not move); the shadow
		// limit of 20 a second on the claims cluster never refuses.
		{"partner-b reads reports", envoyRequest{"192.0.2.2", map[string]string{":method": "GET", ":path": "/api/reports", "x-api-key": "envoy-key-b-77a1f0"}},
			99, "98×passed 1×edge_proxy"},
		// /healthz sends no descriptor: never limited.
		{"health", envoyRequest{"192.0.2.4", map[string]string{":method": "GET", ":path": "/healthz"}}, 3, "3×passed"},
	} {
		var got []string
		for range tc.n {
			got = append(got, throughEnvoy(t, client, p, tc.req))
		}
		if s := runs(got); s != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, s, tc.want)
		}
	}
}

// throughEnvoy returns which filter refused req ("edge_proxy", "sluice")
// or "passed".
func throughEnvoy(t *testing.T, client pb.RateLimitServiceClient, p envoyParts, req envoyRequest) string {
	t.Helper()
	r := route(p, req.headers[":path"])
	if r == nil {
		t.Fatalf("no route for %s", req.headers[":path"])
	}
	for _, rl := range p.ratelimits {
		descs := descriptors(t, p, r, rl.GetStage(), req)
		if len(descs) == 0 {
			continue // the filter asks nothing
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := client.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: rl.GetDomain(), Descriptors: descs})
		cancel()
		if err != nil {
			t.Fatalf("ShouldRateLimit %s %v: %v", rl.GetDomain(), descs, err)
		}
		if resp.GetOverallCode() == pb.RateLimitResponse_OVER_LIMIT {
			return rl.GetDomain()
		}
	}
	return "passed"
}

// runs writes outcomes as runs: "100×passed 1×sluice".
func runs(outcomes []string) string {
	var b []string
	for i := 0; i < len(outcomes); {
		j := i
		for j < len(outcomes) && outcomes[j] == outcomes[i] {
			j++
		}
		b = append(b, fmt.Sprintf("%d×%s", j-i, outcomes[i]))
		i = j
	}
	return strings.Join(b, " ")
}
