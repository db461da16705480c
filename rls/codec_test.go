package rls

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// codecRequests are requests as Envoy sends them, and ones the codec
// leaves to proto.
func codecRequests() []*pb.RateLimitRequest {
	return []*pb.RateLimitRequest{
		{},
		{Domain: "bench", Descriptors: []*rlv3.RateLimitDescriptor{desc("key=k1")}},
		{Domain: "edge", HitsAddend: 7, Descriptors: []*rlv3.RateLimitDescriptor{
			desc("remote_address=10.1.2.3", ":path=/claims/7?full=1", "header:x-api-key=key-a"), desc("generic_key=", "=v"), {},
			{Entries: desc("a=b").Entries, HitsAddend: wrapperspb.UInt64(0), IsNegativeHits: true},
			{Entries: desc("a=b").Entries, HitsAddend: wrapperspb.UInt64(1 << 60)},
			{Entries: []*rlv3.RateLimitDescriptor_Entry{{}}}}},
		{Domain: "ünïcode", Descriptors: []*rlv3.RateLimitDescriptor{desc("schlüssel=wert ✓")}},
		{Domain: "override", Descriptors: []*rlv3.RateLimitDescriptor{{Entries: desc("a=b").Entries,
			Limit: &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 3, Unit: typev3.RateLimitUnit_MINUTE}}}},
	}
}

// TestCodecMatchesProto: the codec reads what proto.Marshal writes as
// proto.Unmarshal does, and writes responses byte for byte as
// proto.Marshal does.
func TestCodecMatchesProto(t *testing.T) {
	c := newCodec()
	for i, want := range codecRequests() {
		b, err := proto.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got := &pb.RateLimitRequest{}
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, got); err != nil || !proto.Equal(got, want) {
			t.Errorf("request %d: read %v (%v), want %v", i, got, err, want)
		}
	}
	limit := &pb.RateLimitResponse_RateLimit{Name: "per-ip", RequestsPerUnit: 100, Unit: pb.RateLimitResponse_RateLimit_MINUTE,
		UnitMultiplier: wrapperspb.UInt32(5)}
	for i, resp := range []*pb.RateLimitResponse{
		{},
		{OverallCode: pb.RateLimitResponse_OK, Statuses: []*pb.RateLimitResponse_DescriptorStatus{{Code: pb.RateLimitResponse_OK}}},
		{OverallCode: pb.RateLimitResponse_OVER_LIMIT, Statuses: []*pb.RateLimitResponse_DescriptorStatus{
			{Code: pb.RateLimitResponse_OVER_LIMIT, CurrentLimit: limit, LimitRemaining: 0, DurationUntilReset: &durationpb.Duration{Seconds: 42}},
			{Code: pb.RateLimitResponse_OK, CurrentLimit: &pb.RateLimitResponse_RateLimit{}, LimitRemaining: 1 << 31, DurationUntilReset: &durationpb.Duration{}},
			{Code: pb.RateLimitResponse_OK, LimitRemaining: 4294967295, DurationUntilReset: &durationpb.Duration{Seconds: -3, Nanos: -5}},
			{CurrentLimit: &pb.RateLimitResponse_RateLimit{UnitMultiplier: wrapperspb.UInt32(0)}}},
			ResponseHeadersToAdd: []*corev3.HeaderValue{{Key: "RateLimit-Policy", Value: `"per-ip";q=100;w=300`}, {Key: "Retry-After", Value: "42"}, {}},
			RequestHeadersToAdd:  []*corev3.HeaderValue{{Key: "X-Sluice-Client", Value: "partner-a", RawValue: []byte("raw")}},
			RawBody:              bytes.Repeat([]byte(`{"type":"about:blank"}`), 1000)},
		{RawBody: []byte{}},
		// Left to proto: these fields, and a name that is not UTF-8.
		{DynamicMetadata: &structpb.Struct{}},
		{Quota: &pb.RateLimitResponse_Quota{Requests: 3}},
		{Statuses: []*pb.RateLimitResponse_DescriptorStatus{{Quota: &pb.RateLimitResponse_Quota{Requests: 1}}}},
		{Statuses: []*pb.RateLimitResponse_DescriptorStatus{{CurrentLimit: &pb.RateLimitResponse_RateLimit{Name: "\xff"}}}},
	} {
		want, wantErr := proto.Marshal(resp)
		data, err := c.Marshal(resp)
		if (err != nil) != (wantErr != nil) || err == nil && !bytes.Equal(data.Materialize(), want) {
			t.Errorf("response %d: wrote %x (%v), proto %x (%v)", i, data.Materialize(), err, want, wantErr)
		}
		data.Free()
	}
}

// TestCodecFields: the messages the codec reads and writes by hand have
// the fields it knows, no more: a new field in go-control-plane fails
// here before it could be dropped.
func TestCodecFields(t *testing.T) {
	for _, tc := range []struct {
		msg  proto.Message
		want string // the field numbers; the codec's own, the others left to proto
	}{
		{&pb.RateLimitRequest{}, "1 2 3"},
		{&rlv3.RateLimitDescriptor{}, "1 2 3 4"},
		{&rlv3.RateLimitDescriptor_Entry{}, "1 2"},
		{&wrapperspb.UInt64Value{}, "1"},
		{&pb.RateLimitResponse{}, "1 2 3 4 5 6 7"},
		{&pb.RateLimitResponse_DescriptorStatus{}, "1 2 3 4 5"},
		{&pb.RateLimitResponse_RateLimit{}, "1 2 3 4"},
		{&durationpb.Duration{}, "1 2"},
		{&wrapperspb.UInt32Value{}, "1"},
		{&corev3.HeaderValue{}, "1 2 3"},
	} {
		d := tc.msg.ProtoReflect().Descriptor()
		var nums []int
		for i := range d.Fields().Len() {
			nums = append(nums, int(d.Fields().Get(i).Number()))
		}
		slices.Sort(nums)
		if got := strings.Trim(fmt.Sprint(nums), "[]"); got != tc.want {
			t.Errorf("%s has fields %s, the codec knows %s", d.FullName(), got, tc.want)
		}
	}
}

// FuzzCodecRequest: on any bytes, the codec fails where proto.Unmarshal
// fails and otherwise reads the same request.
func FuzzCodecRequest(f *testing.F) {
	for _, r := range codecRequests() {
		b, _ := proto.Marshal(r)
		f.Add(b)
	}
	f.Add([]byte("\x0a\x02\xff\xfe"))                 // a domain that is not UTF-8
	f.Add([]byte("\x12\x06\x1a\x02\x08\x05\x1a\x00")) // hits_addend twice: merged, 5 kept
	f.Add([]byte("\x12\x02\x0a\x00\x12\x02\x0a"))     // cut short
	f.Add([]byte("\x18\x80\x80\x80\x80\x10"))         // hits_addend above 2^32
	c := newCodec()
	f.Fuzz(func(t *testing.T, b []byte) {
		want := &pb.RateLimitRequest{}
		wantErr := proto.Unmarshal(b, want)
		got := &pb.RateLimitRequest{}
		err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, got)
		if (err != nil) != (wantErr != nil) || err == nil && !proto.Equal(got, want) {
			t.Fatalf("%x: codec %v (%v), proto %v (%v)", b, got, err, want, wantErr)
		}
	})
}
