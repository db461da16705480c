package fastfront

import (
	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/decision"
)

// setFields sets the decision core's fields on an answer's header h, as
// h.SetBytesV does field by field, but without normalising a name the
// core always sends: those are normalised once (canonicalNames), so
// that an answer's header block is byte for byte what SetBytesV wrote
// (RateLimit-Policy goes out as Ratelimit-Policy) at less cost per
// answer. Any other name goes through SetBytesV.
func setFields(h *fasthttp.ResponseHeader, fields []decision.Field) {
	for _, f := range fields {
		if k := canonicalName(f.Name); k != nil {
			h.SetCanonical(k, f.Value)
		} else {
			h.SetBytesV(f.Name, f.Value)
		}
	}
}

// canonicalName is name as fasthttp normalises it, for the names the
// decision core and the front set on every answer; nil for any other.
func canonicalName(name string) []byte {
	switch name {
	case "RateLimit-Policy":
		return canonicalNames[0]
	case "RateLimit":
		return canonicalNames[1]
	case "Retry-After":
		return canonicalNames[2]
	case "Content-Type":
		return canonicalNames[3]
	case "Cache-Control":
		return canonicalNames[4]
	case RequestIDHeader:
		return canonicalNames[5]
	}
	return nil
}

// canonicalNames are canonicalName's names, normalised by fasthttp
// itself when the package starts, in canonicalName's order.
var canonicalNames = normalised("RateLimit-Policy", "RateLimit", "Retry-After", "Content-Type", "Cache-Control", RequestIDHeader)

func normalised(names ...string) [][]byte {
	out := make([][]byte, len(names))
	for i, name := range names {
		var h fasthttp.ResponseHeader
		h.Set(name, "x")
		for k := range h.All() {
			out[i] = append([]byte(nil), k...)
		}
	}
	return out
}
