package rls

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
)

func TestBadInputIsRefused(t *testing.T) {
	h := start(t, rulesFrom(t, rlRules))
	many := make([]*rlv3.RateLimitDescriptor, 10_000)
	for i := range many {
		many[i] = desc("foo=x")
	}
	badUnit := desc("foo=x")
	badUnit.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_UNKNOWN}
	longPeriod := desc("foo=x")
	longPeriod.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_YEAR,
		UnitMultiplier: wrapperspb.UInt32(2)}
	huge := desc("foo=" + strings.Repeat("v", 2<<20))
	for _, tc := range []struct {
		name string
		req  *pb.RateLimitRequest
		code codes.Code
		msg  string
	}{
		{"empty domain", request("", desc("foo=x")), codes.InvalidArgument, "rls: domain is empty"},
		{"no descriptors", request("rl"), codes.InvalidArgument, "rls: no descriptors"},
		{"10k descriptors", request("rl", many...), codes.InvalidArgument, "rls: 10000 descriptors in one request (at most 1000)"},
		{"override unit unknown", request("rl", badUnit), codes.InvalidArgument, "rls: descriptors[0].limit: unit UNKNOWN"},
		{"override period too long", request("rl", longPeriod), codes.InvalidArgument, "rls: descriptors[0].limit: unit YEAR with unit_multiplier 2"},
		{"message over 1 MiB", request("rl", huge), codes.ResourceExhausted, "larger than max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.call(tc.req)
			if st, _ := status.FromError(err); st.Code() != tc.code || !strings.Contains(st.Message(), tc.msg) {
				t.Fatalf("got %v, want %v containing %q", err, tc.code, tc.msg)
			}
		})
	}
	if got := brief(h.ask(request("rl", desc("foo=x")))); got != "OK OK/1/60s" {
		t.Errorf("after the refusals: %q, want the first count (a refused call counts nothing)", got)
	}
}

// TestBadInputIsAnswered: what envoyproxy/ratelimit answers OK (or by a
// rule) is answered alike, and a long value is counted under its hash.
func TestBadInputIsAnswered(t *testing.T) {
	h := start(t, rulesFrom(t, rlRules))
	long := strings.Repeat("v", 64<<10)
	runSteps(t, h, []step{
		{0, request("rl", desc("=")), "OK OK"},
		{0, request("rl", desc("=x")), "OK OK"},
		{0, request("rl", desc("foo=")), "OK OK/1/60s"}, // key-only rules match an empty value
		{0, request("rl", &rlv3.RateLimitDescriptor{}), "OK OK"},
		{0, request("unknown-domain", desc("foo=x")), "OK OK"},
		{0, request("rl", desc("foo="+long)), "OK OK/1/60s"},
		{0, request("rl", desc("foo="+long)), "OK OK/0/60s"},
		{0, request("rl", desc("foo="+long)), "OVER_LIMIT OVER_LIMIT/0/60s"},
		{0, request("rl", desc("foo="+long[1:]+"w")), "OK OK/1/60s"}, // another long value, another count
	})
	for _, v := range []string{long, long[1:] + "w"} {
		if k := key("rl", desc("foo="+v), nil); k.Len() > 128 {
			t.Errorf("store key of a 64 KiB value is %d bytes, want its hash (at most 128)", k.Len())
		}
	}
}

// TestKeysDoNotCollide: envoyproxy/ratelimit joins keys with '_', so key
// "a_b" value "c" and key "a" value "b_c" share a count there; not here.
func TestKeysDoNotCollide(t *testing.T) {
	if a, b := key("d", desc("a_b=c"), nil), key("d", desc("a=b_c"), nil); a == b {
		t.Fatalf("both keys are %q", a)
	}
	if a, b := key("d", desc("x="+strings.Repeat("y", 300)), nil), key("d", desc("x=#"+strings.Repeat("y", 10)), nil); a == b {
		t.Fatalf("a hashed and a literal value share key %q", a)
	}
}

func TestMetricLabelsComeFromConfiguration(t *testing.T) {
	h := start(t, rulesFrom(t, rlRules))
	h.ask(request("rl", desc("foo=secret-value"), desc("path=/api/secret-path"), desc("unmatched=secret-3")))
	h.ask(request("secret-domain", desc("foo=x")))
	h.ask(request("rl", desc("foo=secret-value")))
	h.ask(request("rl", desc("foo=secret-value")))
	_, _ = h.call(request("", desc("foo=x")))
	families, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "secret") {
					t.Errorf("%s has label %s=%q from a request", f.GetName(), l.GetName(), l.GetValue())
				}
			}
		}
	}
	m := h.srv.metrics
	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"rl", "foo", "ok"}, 2},
		{[]string{"rl", "foo", "over_limit"}, 1},
		{[]string{"rl", "path_/api/*", "ok"}, 1},
		{[]string{"rl", unmatchedLabel, "ok"}, 1},
	} {
		if got := testutil.ToFloat64(m.descriptors.WithLabelValues(c.labels...)); got != c.want {
			t.Errorf("descriptors%v = %v, want %v", c.labels, got, c.want)
		}
	}
	for _, c := range []struct {
		domain, code string
		want         float64
	}{{"rl", "ok", 2}, {"rl", "over_limit", 1}, {unknownDomain, "ok", 1}, {unknownDomain, "invalid", 1}} {
		if got := testutil.ToFloat64(m.requests.WithLabelValues(c.domain, c.code)); got != c.want {
			t.Errorf("requests{%s,%s} = %v, want %v", c.domain, c.code, got, c.want)
		}
	}
}

func TestHealthAndReflection(t *testing.T) {
	h := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hc := healthpb.NewHealthClient(h.conn)
	for _, svc := range []string{"", serviceName} {
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health of %q: %v %v, want SERVING", svc, resp, err)
		}
	}
	stream, err := reflectpb.NewServerReflectionClient(h.conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectpb.ServerReflectionRequest{MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	if !strings.Contains(strings.Join(names, " "), serviceName) {
		t.Errorf("reflection lists %v, want %s among them", names, serviceName)
	}
	_ = stream.CloseSend()
}

// blockingStore holds every decision until its context ends: a store
// that hangs, as a SIGSTOPped Redis does behind a store without a timeout.
type blockingStore struct{ store.Store }

func (blockingStore) DecideEach(ctx context.Context, _ []store.Result, _ []store.Request, _ time.Time) ([]store.Result, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestHungStoreNeverHoldsEnvoy: past Options.Timeout the call is answered,
// OK as on_failure: open answers (OVER_LIMIT as closed does), and counted
// as a store error either way.
func TestHungStoreNeverHoldsEnvoy(t *testing.T) {
	h := start(t, nil)
	hung := startWith(t, rulesFrom(t, rlRules), blockingStore{h.srv.opts.Store}, h.clk, Options{Timeout: 50 * time.Millisecond})
	got := brief(hung.ask(request("rl", desc("foo=x"))))
	if got != "OK OK/0/0s" {
		t.Errorf("got %q, want OK with the limit and nothing counted", got)
	}
	if n := testutil.ToFloat64(hung.srv.metrics.storeErrors.WithLabelValues("rl")); n != 1 {
		t.Errorf("store errors %v, want 1", n)
	}
	closed := startWith(t, rulesFrom(t, rlRules), blockingStore{h.srv.opts.Store}, h.clk,
		Options{Timeout: 50 * time.Millisecond, OnStoreError: store.FailClosed})
	resp := closed.ask(request("rl", desc("foo=x")))
	if got := brief(resp); got != "OVER_LIMIT OVER_LIMIT/0/1s" || headerMap(resp)["Retry-After"] != "1" {
		t.Errorf("on_failure closed: got %q, Retry-After %q, want OVER_LIMIT for 1s", got, headerMap(resp)["Retry-After"])
	}
	if n := testutil.ToFloat64(closed.srv.metrics.storeErrors.WithLabelValues("rl")); n != 1 {
		t.Errorf("on_failure closed: store errors %v, want 1", n)
	}
}

func TestShutdownWaitsForCallsThenStops(t *testing.T) {
	h := start(t, rulesFrom(t, rlRules))
	h.ask(request("rl", desc("foo=x")))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := h.call(request("rl", desc("foo=x"))); status.Code(err) != codes.Unavailable {
		t.Fatalf("after Shutdown: %v, want Unavailable", err)
	}
}

// TestConnectionSettingsBounded: the server's first frame on a raw
// HTTP/2 connection announces SETTINGS_MAX_CONCURRENT_STREAMS (0x3) of
// maxStreams and SETTINGS_MAX_HEADER_LIST_SIZE (0x6) of maxHeaderBytes,
// so that one connection cannot hold unbounded calls, nor 16 MiB of
// header fields in each.
func TestConnectionSettingsBounded(t *testing.T) {
	h := start(t, nil)
	c, err := net.Dial("tcp", h.conn.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// The client preface and an empty SETTINGS frame.
	if _, err := c.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")); err != nil {
		t.Fatal(err)
	}
	var head [9]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		t.Fatal(err)
	}
	n := int(head[0])<<16 | int(head[1])<<8 | int(head[2])
	if head[3] != 0x4 || head[4]&0x1 != 0 || n%6 != 0 {
		t.Fatalf("first frame: type %#x flags %#x length %d, want SETTINGS", head[3], head[4], n)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(c, payload); err != nil {
		t.Fatal(err)
	}
	got := map[uint16]uint32{}
	for p := payload; len(p) >= 6; p = p[6:] {
		got[binary.BigEndian.Uint16(p)] = binary.BigEndian.Uint32(p[2:])
	}
	if got[0x3] != maxStreams || got[0x6] != maxHeaderBytes {
		t.Errorf("SETTINGS %x: MAX_CONCURRENT_STREAMS %d, MAX_HEADER_LIST_SIZE %d, want %d and %d",
			payload, got[0x3], got[0x6], maxStreams, maxHeaderBytes)
	}
}

// keyRecorder is a store that notes the keys it is asked about.
type keyRecorder struct {
	store.Store
	mu   sync.Mutex
	keys []store.Key
}

func (r *keyRecorder) DecideEach(ctx context.Context, _ []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	r.mu.Lock()
	for _, q := range reqs {
		r.keys = append(r.keys, q.Key)
	}
	r.mu.Unlock()
	return r.Store.DecideEach(ctx, nil, reqs, now)
}

// TestStoreKeysBounded: a descriptor with its own limit is counted on its
// entries, whatever they are: a 64 KiB entry key, or 20,000 entries, make
// a store key of at most maxStoreKey bytes, and two such descriptors that
// differ in one byte still count apart.
func TestStoreKeysBounded(t *testing.T) {
	clk := clock.NewFake(epoch)
	rec := &keyRecorder{Store: memory.New(memory.Options{Clock: clk})}
	h := startWith(t, rulesFrom(t, rlRules), rec, clk, Options{})
	override := func(d *rlv3.RateLimitDescriptor) *rlv3.RateLimitDescriptor {
		d.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_MINUTE}
		return d
	}
	long := strings.Repeat("k", 64<<10)
	many := desc()
	for i := range 20_000 {
		many.Entries = append(many.Entries, &rlv3.RateLimitDescriptor_Entry{Key: "k" + strconv.Itoa(i), Value: "v"})
	}
	for _, d := range []*rlv3.RateLimitDescriptor{override(desc(long + "a=x")), override(desc(long + "b=x")), override(many)} {
		if got := brief(h.ask(request("rl", d))); got != "OK OK/0/60s" {
			t.Errorf("the first call: %q, want OK", got)
		}
	}
	if len(rec.keys) != 3 || rec.keys[0] == rec.keys[1] {
		t.Fatalf("store keys %d, the first two the same: %v", len(rec.keys), len(rec.keys) == 3 && rec.keys[0] == rec.keys[1])
	}
	for i, k := range rec.keys {
		if k.Len() > maxStoreKey {
			t.Errorf("store key %d is %d bytes (at most %d)", i, k.Len(), maxStoreKey)
		}
	}
}

// TestConnectionAttacks: what a caller on raw HTTP/2 connections holds,
// and for how long. Each row is an attack of issue 15 and the bound that
// ends it (the row held before when it says so); the bounds are set short
// or long so that each row shows one of them.
func TestConnectionAttacks(t *testing.T) {
	const short = 300 * time.Millisecond
	closed := func(c *rawConn) string {
		if c.closedWithin(20 * time.Second) {
			return "closed"
		}
		return "open after 20s"
	}
	for _, tc := range []struct {
		name   string
		opts   Options
		attack func(t *testing.T, h *harness) string
		want   string
	}{
		{"item 1: preface and SETTINGS, then no call: closed at IdleTimeout", Options{IdleTimeout: short},
			func(t *testing.T, h *harness) string { return closed(dialRaw(t, h.conn.Target(), greeting)) }, "closed"},
		{"item 1: half a preface, then nothing: closed at HandshakeTimeout", Options{HandshakeTimeout: short},
			func(t *testing.T, h *harness) string { return closed(dialRaw(t, h.conn.Target(), greeting[:10])) }, "closed"},
		{"item 1: a connection that sends nothing: closed at HandshakeTimeout", Options{HandshakeTimeout: short},
			func(t *testing.T, h *harness) string { return closed(dialRaw(t, h.conn.Target(), nil)) }, "closed"},
		{"item 1: a call ended, then no other: closed at IdleTimeout", Options{IdleTimeout: short, MessageTimeout: short},
			func(t *testing.T, h *harness) string {
				c := dialRaw(t, h.conn.Target(), greeting)
				c.calls(1, 1)
				return closed(c)
			}, "closed"},
		{"keepalive: 5 pings at once: GOAWAY too_many_pings, closed (held before)", Options{},
			func(t *testing.T, h *harness) string {
				c := dialRaw(t, h.conn.Target(), greeting)
				for i := range 5 {
					if err := c.fr.WritePing(false, [8]byte{byte(i)}); err != nil {
						t.Fatal(err)
					}
				}
				return closed(c)
			}, "closed"},
		{"item 2: HEADERS without their message: reset at MessageTimeout", Options{MessageTimeout: short},
			func(t *testing.T, h *harness) string {
				c := dialRaw(t, h.conn.Target(), greeting)
				c.calls(1, 1)
				return fmt.Sprintf("%d reset", watchResets(c).reach(1))
			}, "1 reset"},
		{"item 2: 3 connections x 40 HEADERS without their message, MaxWaitingCalls 16: the 104 oldest reset at once, " +
			"then the oldest for a real call, which is answered", Options{MaxWaitingCalls: 16, MessageTimeout: time.Hour},
			func(t *testing.T, h *harness) string {
				before := runtime.NumGoroutine()
				conns := []*rawConn{dialRaw(t, h.conn.Target(), greeting), dialRaw(t, h.conn.Target(), greeting),
					dialRaw(t, h.conn.Target(), greeting)}
				for _, c := range conns {
					c.calls(1, 40)
				}
				r := watchResets(conns...)
				flood := r.reach(104)
				// Each connection's three (reading, writing, keepalive), the
				// readers above, and one for each call that waits (on a
				// stream worker, or on a goroutine of its own when the
				// workers were busy as it came).
				if n := goroutinesAtMost(before + 3*3 + 3 + 16); n > before+3*3+3+16 {
					t.Errorf("goroutines: %d before the flood, %d under it", before, n)
				}
				answer := brief(h.ask(request("rl", desc("foo=x"))))
				return fmt.Sprintf("%d reset, then %s, then %d reset", flood, answer, r.reach(105))
			}, "104 reset, then OK OK, then 105 reset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			h := startWith(t, nil, memory.New(memory.Options{Clock: clk}), clk, tc.opts)
			if got := tc.attack(t, h); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
