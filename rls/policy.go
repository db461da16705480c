package rls

import (
	"context"
	"net/netip"
	"net/textproto"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/policy"
)

// DefaultPolicyDomain is the domain whose requests sluice's own policy
// decides when Options.Decide is set.
const DefaultPolicyDomain = "sluice"

// The descriptor entry keys that describe the HTTP request of a call of
// the policy domain. Envoy's remote_address action sends the first; its
// request_headers action sends any header under the descriptor_key given,
// which names the others.
const (
	entryAddress = "remote_address" // the caller's address
	entryMethod  = "method"         // or ":method"
	entryPath    = "path"           // or ":path": the path, with or without its query
	entryHeader  = "header:"        // "header:x-api-key": a header field of the request
	entryHost    = "host"           // or ":authority": the host the request is for
)

// decidePolicy decides a call of the policy domain with sluice's own
// policy: all its descriptors' entries together describe one HTTP request
// (see entryAddress ...), decided as the gateway would decide it. The
// answer is OK or OVER_LIMIT for the request as a whole, in every
// descriptor's status; response_headers_to_add carries the RateLimit
// fields (and a refusal's Retry-After and Content-Type), raw_body a
// refusal's problem+json, and request_headers_to_add the caller's
// X-Sluice-Client for the service.
func (s *Server) decidePolicy(ctx context.Context, req *pb.RateLimitRequest, dom *domainStats) (*pb.RateLimitResponse, error) {
	hr, err := httpRequest(req)
	if err != nil {
		dom.failed.Inc()
		return nil, err
	}
	v := s.opts.Decide(ctx, hr)
	resp := &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK, Statuses: make([]*pb.RateLimitResponse_DescriptorStatus, len(req.GetDescriptors()))}
	if !v.Pass {
		resp.OverallCode = pb.RateLimitResponse_OVER_LIMIT
		resp.RawBody = append([]byte(nil), v.Body...)
	}
	for i := range resp.Statuses {
		resp.Statuses[i] = &pb.RateLimitResponse_DescriptorStatus{Code: resp.OverallCode}
	}
	for _, f := range v.Header {
		if f.Name == "Cache-Control" { // for the problem body, which Envoy sends as it is
			continue
		}
		resp.ResponseHeadersToAdd = append(resp.ResponseHeadersToAdd, &corev3.HeaderValue{Key: f.Name, Value: string(f.Value)})
	}
	if v.Pass && v.Client != "" {
		resp.RequestHeadersToAdd = []*corev3.HeaderValue{{Key: policy.ClientHeader, Value: v.Client}}
	}
	if v.Pass {
		// The request goes on without sluice: its end is never known,
		// so what it reserved stands (nothing is settled).
		v.Finish(&decision.Response{Passed: true, Unanswered: true})
		dom.ok.Inc()
	} else {
		v.Finish(nil)
		dom.over.Inc()
	}
	return resp, nil
}

// httpRequest reads the request the entries describe; an entry key it
// does not know is left aside (Envoy's other actions, such as
// generic_key, may share the request).
func httpRequest(req *pb.RateLimitRequest) (decision.Request, error) {
	hr := decision.Request{Method: "GET", Path: "/"}
	var h entryHeaders
	hostKey := "" // the key of the entry that named hr.Host
	for _, d := range req.GetDescriptors() {
		for _, e := range d.GetEntries() {
			k, v := e.GetKey(), e.GetValue()
			switch {
			case k == entryAddress:
				a, err := netip.ParseAddr(v)
				if err != nil {
					return hr, status.Errorf(codes.InvalidArgument, "rls: %s %q is not an IP address", entryAddress, clip(v))
				}
				hr.Peer = netip.AddrPortFrom(a.Unmap(), 0)
			case k == entryMethod || k == ":"+entryMethod:
				hr.Method = v
			case k == entryPath || k == ":"+entryPath:
				p, _, _ := strings.Cut(v, "?")
				if !strings.HasPrefix(p, "/") {
					return hr, status.Errorf(codes.InvalidArgument, "rls: %s %q is not a path (such as /claims/7?full=1)", k, clip(v))
				}
				hr.Path = p
			case k == entryHost || k == ":authority":
				if hostKey != "" && v != hr.Host {
					return hr, status.Errorf(codes.InvalidArgument, "rls: %s %q and %s %q: two hosts for one request (send one, as request_headers with header_name \":authority\" does)",
						hostKey, clip(hr.Host), k, clip(v))
				}
				hr.Host, hostKey = v, k
			case strings.HasPrefix(k, entryHeader) && len(k) > len(entryHeader):
				h = append(h, field{textproto.CanonicalMIMEHeaderKey(k[len(entryHeader):]), v})
			}
		}
	}
	// A call names its host only when Envoy is told to send it: without
	// an entry for it, rules that match on the host do not match, the
	// others apply. An entry that names the empty host is a request the
	// gateway refuses (400) when a rule matches on the host, and so here:
	// its upstream would serve it as some host that no rule saw.
	hr.HostOptional = hostKey == ""
	hr.Header = h.unique()
	return hr, nil
}

// field is one header field of an entryHeaders.
type field struct{ name, value string }

// entryHeaders are the header fields the entries carry, in canonical form.
type entryHeaders []field

// unique drops the fields whose name and value came before: actions
// repeated in several of Envoy's rate_limits send the same entry in
// several descriptors, and Envoy sends only a header's first value, so a
// repeat is the configuration's, not a caller's field sent twice. Past a
// few fields, the ones kept are looked up in a map.
func (h entryHeaders) unique() entryHeaders {
	out := h[:0] // never ahead of the field read
	if len(h) <= 8 {
		for _, f := range h {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
		return out
	}
	seen := make(map[field]bool, len(h))
	for _, f := range h {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// Values appends the values of the fields named name.
func (h entryHeaders) Values(dst []string, name string) []string {
	for _, f := range h {
		if f.name == name {
			dst = append(dst, f.value)
		}
	}
	return dst
}

// Names appends each field's name, once per field: decision.Headers
// allows a name more than once, and the Engine lists each in Removed once.
func (h entryHeaders) Names(dst []string) []string {
	for _, f := range h {
		dst = append(dst, f.name)
	}
	return dst
}

// clip shortens s for a message.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "..."
}
