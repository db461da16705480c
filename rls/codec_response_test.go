package rls

import (
	"bytes"
	"math/rand/v2"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// FuzzCodecResponse: on any response of the fields the codec writes
// (negative enums and durations, empty and non-UTF-8 strings among them),
// the codec fails where proto.Marshal fails and otherwise writes its bytes.
func FuzzCodecResponse(f *testing.F) {
	f.Add(int32(1), int32(2), uint32(3), int32(1), int64(5), int32(7), "name", "k", "v", []byte("raw"), uint8(7), uint32(0))
	f.Add(int32(-1), int32(-2), uint32(0), int32(-3), int64(-5), int32(-7), "", "", "", []byte(nil), uint8(255), uint32(9))
	c := newCodec()
	f.Fuzz(func(t *testing.T, overall, code int32, rem uint32, unit int32, secs int64, nanos int32, name, k, v string, raw []byte, mask uint8, mult uint32) {
		st := &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_Code(code), LimitRemaining: rem}
		if mask&1 != 0 {
			st.CurrentLimit = &pb.RateLimitResponse_RateLimit{Name: name, RequestsPerUnit: rem, Unit: pb.RateLimitResponse_RateLimit_Unit(unit)}
			if mask&16 != 0 {
				st.CurrentLimit.UnitMultiplier = wrapperspb.UInt32(mult)
			}
		}
		if mask&2 != 0 {
			st.DurationUntilReset = &durationpb.Duration{Seconds: secs, Nanos: nanos}
		}
		r := &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_Code(overall)}
		if mask&4 != 0 {
			r.Statuses = []*pb.RateLimitResponse_DescriptorStatus{st, st}
		}
		if mask&8 != 0 {
			r.ResponseHeadersToAdd = []*corev3.HeaderValue{{Key: k, Value: v, RawValue: raw}}
		}
		if mask&32 != 0 {
			r.RequestHeadersToAdd = []*corev3.HeaderValue{{Key: v, Value: k}}
		}
		if mask&64 != 0 {
			r.RawBody = raw
		}
		want, wantErr := proto.Marshal(r)
		got, err := c.Marshal(r)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("codec %v, proto %v", err, wantErr)
		}
		if err == nil && !bytes.Equal(got.Materialize(), want) {
			t.Fatalf("codec %x, proto %x for %v", got.Materialize(), want, r)
		}
	})
}

// TestCodecResponseValues writes responses of every field's edge values
// (FuzzCodecResponse's claim, on a fixed seed).
func TestCodecResponseValues(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	vals := []int64{0, 1, -1, 127, 128, 1 << 31, -(1 << 31), 1<<63 - 1, -1 << 63, 999999999, -999999999}
	strs := []string{"", "a", "\xff", "RateLimit", string(make([]byte, 200))}
	c := newCodec()
	pick := func() int64 { return vals[rng.IntN(len(vals))] }
	s := func() string { return strs[rng.IntN(len(strs))] }
	for range 20000 {
		st := &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_Code(pick()), LimitRemaining: uint32(pick())}
		if rng.IntN(2) == 0 {
			st.CurrentLimit = &pb.RateLimitResponse_RateLimit{Name: s(), RequestsPerUnit: uint32(pick()), Unit: pb.RateLimitResponse_RateLimit_Unit(pick())}
			if rng.IntN(2) == 0 {
				st.CurrentLimit.UnitMultiplier = wrapperspb.UInt32(uint32(pick()))
			}
		}
		if rng.IntN(2) == 0 {
			st.DurationUntilReset = &durationpb.Duration{Seconds: pick(), Nanos: int32(pick())}
		}
		r := &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_Code(pick())}
		for range rng.IntN(3) {
			r.Statuses = append(r.Statuses, st)
		}
		for range rng.IntN(3) {
			r.ResponseHeadersToAdd = append(r.ResponseHeadersToAdd, &corev3.HeaderValue{Key: s(), Value: s(), RawValue: []byte(s())})
		}
		for range rng.IntN(3) {
			r.RequestHeadersToAdd = append(r.RequestHeadersToAdd, &corev3.HeaderValue{Key: s(), Value: s()})
		}
		if rng.IntN(2) == 0 {
			r.RawBody = []byte(s())
		}
		want, wantErr := proto.Marshal(r)
		got, err := c.Marshal(r)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("codec %v, proto %v for %v", err, wantErr, r)
		}
		if err == nil && !bytes.Equal(got.Materialize(), want) {
			t.Fatalf("codec %x, proto %x for %v", got.Materialize(), want, r)
		}
	}
}
