package rls

import (
	"unicode/utf8"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the codec that codec falls back on
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// codec is the server's gRPC codec. Every call's RateLimitRequest is read,
// and its RateLimitResponse written, by hand for the fields Envoy sends
// and this package answers: the largest items of the server's own work
// under bench/rls.sh's load, after gRPC's transport, were proto's generic
// Unmarshal and Marshal. Anything else goes through gRPC's own proto
// codec: other messages (health, reflection), and a request or response
// with a field the hand-written code does not read or write (a
// descriptor's own limit, unknown fields, dynamic_metadata, quota, ...),
// a repeated message field that proto would merge, or a string that is
// not UTF-8 (which proto refuses). So what a call means never depends on
// which of the two read it (TestCodecMatchesProto, FuzzCodecRequest).
type codec struct{ proto encoding.CodecV2 }

var _ encoding.CodecV2 = codec{}

// newCodec returns the codec, falling back on gRPC's registered "proto".
func newCodec() codec { return codec{proto: encoding.GetCodecV2("proto")} }

// Name is gRPC's codec name: the content-subtype proto is sent as.
func (codec) Name() string { return "proto" }

// Unmarshal reads a message.
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	req, ok := v.(*pb.RateLimitRequest)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	var b []byte
	if len(data) == 1 {
		b = data[0].ReadOnlyData()
	} else {
		b = data.Materialize()
	}
	if readRequest(b, req) {
		return nil
	}
	proto.Reset(req)
	return c.proto.Unmarshal(data, v)
}

// Marshal writes a message.
func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	resp, ok := v.(*pb.RateLimitResponse)
	if !ok {
		return c.proto.Marshal(v)
	}
	size, ok := responseSize(resp)
	if !ok {
		return c.proto.Marshal(v)
	}
	if mem.IsBelowBufferPoolingThreshold(size) {
		return mem.BufferSlice{mem.SliceBuffer(appendResponse(make([]byte, 0, size), resp))}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	*buf = appendResponse((*buf)[:0], resp)
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

// wire is a message being read: its bytes, and the same bytes as one
// string, which every string field is a part of (one allocation for all).
type wire struct {
	b []byte
	s string
}

// field reads the tag at b[pos:]: its number and type and the position
// after it; ok false for a malformed tag.
func (w *wire) field(pos int) (num protowire.Number, typ protowire.Type, next int, ok bool) {
	num, typ, n := protowire.ConsumeTag(w.b[pos:])
	return num, typ, pos + n, n > 0
}

// span reads a length-delimited value at pos: where it starts and ends.
func (w *wire) span(pos int) (start, end int, ok bool) {
	v, n := protowire.ConsumeBytes(w.b[pos:])
	if n < 0 {
		return 0, 0, false
	}
	return pos + n - len(v), pos + n, true
}

// str reads a string at pos, and the position after it; ok false if it
// is malformed or not UTF-8.
func (w *wire) str(pos int) (string, int, bool) {
	start, end, ok := w.span(pos)
	if !ok || !utf8.ValidString(w.s[start:end]) {
		return "", 0, false
	}
	return w.s[start:end], end, true
}

// varint reads a varint at pos, and the position after it.
func (w *wire) varint(pos int) (uint64, int, bool) {
	v, n := protowire.ConsumeVarint(w.b[pos:])
	return v, pos + n, n > 0
}

// readRequest reads b into req, an empty request, as proto.Unmarshal
// would; false (req then half read) for what it leaves to proto.
func readRequest(b []byte, req *pb.RateLimitRequest) bool {
	w := &wire{b: b, s: string(b)}
	for pos := 0; pos < len(b); {
		num, typ, pos2, ok := w.field(pos)
		if !ok {
			return false
		}
		switch {
		case num == 1 && typ == protowire.BytesType:
			req.Domain, pos, ok = w.str(pos2)
		case num == 2 && typ == protowire.BytesType:
			var start, end int
			if start, end, ok = w.span(pos2); ok {
				d := &rlv3.RateLimitDescriptor{}
				ok = readDescriptor(&wire{b: w.b[:end], s: w.s[:end]}, start, d)
				req.Descriptors = append(req.Descriptors, d)
				pos = end
			}
		case num == 3 && typ == protowire.VarintType:
			var v uint64
			v, pos, ok = w.varint(pos2)
			req.HitsAddend = uint32(v)
		default:
			return false
		}
		if !ok {
			return false
		}
	}
	return true
}

// readDescriptor reads a descriptor from w.b[pos:] (w ends with it).
func readDescriptor(w *wire, pos int, d *rlv3.RateLimitDescriptor) bool {
	for pos < len(w.b) {
		num, typ, pos2, ok := w.field(pos)
		if !ok {
			return false
		}
		switch {
		case num == 1 && typ == protowire.BytesType:
			var start, end int
			if start, end, ok = w.span(pos2); ok {
				e := &rlv3.RateLimitDescriptor_Entry{}
				ok = readEntry(&wire{b: w.b[:end], s: w.s[:end]}, start, e)
				d.Entries = append(d.Entries, e)
				pos = end
			}
		case num == 3 && typ == protowire.BytesType && d.HitsAddend == nil: // a second one proto merges
			var start, end int
			if start, end, ok = w.span(pos2); ok {
				d.HitsAddend = &wrapperspb.UInt64Value{}
				ok = readUint64Value(&wire{b: w.b[:end], s: w.s[:end]}, start, d.HitsAddend)
				pos = end
			}
		case num == 4 && typ == protowire.VarintType:
			var v uint64
			v, pos, ok = w.varint(pos2)
			d.IsNegativeHits = v != 0
		default: // limit (2) among them: rare, and left to proto
			return false
		}
		if !ok {
			return false
		}
	}
	return true
}

// readEntry reads an entry from w.b[pos:] (w ends with it).
func readEntry(w *wire, pos int, e *rlv3.RateLimitDescriptor_Entry) bool {
	for pos < len(w.b) {
		num, typ, pos2, ok := w.field(pos)
		if !ok || typ != protowire.BytesType {
			return false
		}
		switch num {
		case 1:
			e.Key, pos, ok = w.str(pos2)
		case 2:
			e.Value, pos, ok = w.str(pos2)
		default:
			return false
		}
		if !ok {
			return false
		}
	}
	return true
}

// readUint64Value reads a UInt64Value from w.b[pos:] (w ends with it).
func readUint64Value(w *wire, pos int, v *wrapperspb.UInt64Value) bool {
	for pos < len(w.b) {
		num, typ, pos2, ok := w.field(pos)
		if !ok || num != 1 || typ != protowire.VarintType {
			return false
		}
		if v.Value, pos, ok = w.varint(pos2); !ok {
			return false
		}
	}
	return true
}

// The sizes of a response's parts, as proto.Size counts them; ok false
// for one with a field left to proto.

func responseSize(r *pb.RateLimitResponse) (int, bool) {
	if r.DynamicMetadata != nil || r.Quota != nil {
		return 0, false
	}
	n := varintField(uint64(r.OverallCode))
	for _, st := range r.Statuses {
		m, ok := statusSize(st)
		if !ok {
			return 0, false
		}
		n += messageField(m)
	}
	for _, list := range [2][]*corev3.HeaderValue{r.ResponseHeadersToAdd, r.RequestHeadersToAdd} {
		for _, h := range list {
			if h == nil {
				return 0, false
			}
			m, ok := headerSize(h)
			if !ok {
				return 0, false
			}
			n += messageField(m)
		}
	}
	return n + bytesField(len(r.RawBody)), true
}

func statusSize(st *pb.RateLimitResponse_DescriptorStatus) (int, bool) {
	if st == nil || st.Quota != nil {
		return 0, false
	}
	n := varintField(uint64(st.Code)) + varintField(uint64(st.LimitRemaining))
	if l := st.CurrentLimit; l != nil {
		if !utf8.ValidString(l.Name) { // proto refuses to write it
			return 0, false
		}
		n += messageField(limitSize(l))
	}
	if d := st.DurationUntilReset; d != nil {
		n += messageField(durationSize(d))
	}
	return n, true
}

func limitSize(l *pb.RateLimitResponse_RateLimit) int {
	n := varintField(uint64(l.RequestsPerUnit)) + varintField(uint64(l.Unit)) + bytesField(len(l.Name))
	if m := l.UnitMultiplier; m != nil {
		n += messageField(varintField(uint64(m.Value)))
	}
	return n
}

func durationSize(d *durationpb.Duration) int {
	return varintField(uint64(d.Seconds)) + varintField(uint64(int64(d.Nanos)))
}

func headerSize(h *corev3.HeaderValue) (int, bool) {
	if !utf8.ValidString(h.Key) || !utf8.ValidString(h.Value) { // proto refuses to write them
		return 0, false
	}
	return bytesField(len(h.Key)) + bytesField(len(h.Value)) + bytesField(len(h.RawValue)), true
}

// Every field of these messages has a number below 16, so its tag is one
// byte.

// varintField is the size of a varint field of value v, 0 for v 0 (proto3
// leaves it out).
func varintField(v uint64) int {
	if v == 0 {
		return 0
	}
	return 1 + protowire.SizeVarint(v)
}

// bytesField is the size of a length-delimited field of n bytes, 0 for
// none.
func bytesField(n int) int {
	if n == 0 {
		return 0
	}
	return 1 + protowire.SizeBytes(n)
}

// messageField is the size of a message field of n bytes, there even when
// empty.
func messageField(n int) int { return 1 + protowire.SizeBytes(n) }

// appendResponse appends r, as responseSize sized it, in field order, as
// proto.Marshal writes it.
func appendResponse(b []byte, r *pb.RateLimitResponse) []byte {
	b = appendVarint(b, 1, uint64(r.OverallCode))
	for _, st := range r.Statuses {
		n, _ := statusSize(st)
		b = protowire.AppendVarint(protowire.AppendTag(b, 2, protowire.BytesType), uint64(n))
		b = appendStatus(b, st)
	}
	for i, list := range [2][]*corev3.HeaderValue{r.ResponseHeadersToAdd, r.RequestHeadersToAdd} {
		for _, h := range list {
			n, _ := headerSize(h)
			b = protowire.AppendVarint(protowire.AppendTag(b, protowire.Number(3+i), protowire.BytesType), uint64(n))
			b = appendString(b, 1, h.Key)
			b = appendString(b, 2, h.Value)
			b = appendBytes(b, 3, h.RawValue)
		}
	}
	return appendBytes(b, 5, r.RawBody)
}

func appendStatus(b []byte, st *pb.RateLimitResponse_DescriptorStatus) []byte {
	b = appendVarint(b, 1, uint64(st.Code))
	if l := st.CurrentLimit; l != nil {
		b = protowire.AppendVarint(protowire.AppendTag(b, 2, protowire.BytesType), uint64(limitSize(l)))
		b = appendVarint(b, 1, uint64(l.RequestsPerUnit))
		b = appendVarint(b, 2, uint64(l.Unit))
		b = appendString(b, 3, l.Name)
		if m := l.UnitMultiplier; m != nil {
			b = protowire.AppendVarint(protowire.AppendTag(b, 4, protowire.BytesType), uint64(varintField(uint64(m.Value))))
			b = appendVarint(b, 1, uint64(m.Value))
		}
	}
	b = appendVarint(b, 3, uint64(st.LimitRemaining))
	if d := st.DurationUntilReset; d != nil {
		b = protowire.AppendVarint(protowire.AppendTag(b, 4, protowire.BytesType), uint64(durationSize(d)))
		b = appendVarint(b, 1, uint64(d.Seconds))
		b = appendVarint(b, 2, uint64(int64(d.Nanos)))
	}
	return b
}

// appendVarint appends a varint field, nothing for 0.
func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

// appendString appends a string field, nothing for "".
func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
}

// appendBytes appends a bytes field, nothing for none.
func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}
