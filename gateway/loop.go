package gateway

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/valyala/fasthttp"
)

// loopHeader carries, on what sluice forwards, the marks of the sluice
// instances the request has passed through. Each instance's mark is 128
// random bits drawn at start: a request arriving with this instance's own
// mark has come back from its upstream (upstream pointing, directly or
// through other proxies, at sluice itself) and is answered 508 instead of
// forwarded again, round and round until file descriptors run out.
//
// A caller cannot guess the mark, and a mark it learns (from an upstream
// that echoes request headers) gets only its own requests answered 508:
// the check looks at the request in hand and remembers nothing. Marks are
// compared in constant time, never logged, never sent back to callers
// (the proxy drops the header from responses: newProxy), and a caller's copies
// are forwarded only as far as they look like marks, the nearest hops'
// first, at most maxMarks with this instance's.
const loopHeader = "Sluice-Loop-Mark"

// loopHeaders is loopHeader as the proxy strips it in every spelling an
// upstream reads as the same (Sluice_Loop_Mark too: one header to a
// CGI-style upstream): from a caller's request (Forwarding.Strip, the
// marks going on in its place), and from an upstream's answer echoing
// request headers (Proxy.StripResponse: newProxy).
var loopHeaders = []string{loopHeader}

// maxMarks bounds the marks forwarded: a loop through this many sluice
// instances is still caught, whatever marks the caller sent.
const maxMarks = 8

func newLoopToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

func isMark(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// looped reports whether h carries this instance's mark. The header is
// walked, not split into a slice: a caller's header full of commas would
// cost 16 bytes a comma.
func (g *Gateway) looped(h *fasthttp.RequestHeader) bool {
	for k, v := range h.All() {
		if !isLoopHeader(b2s(k)) {
			continue
		}
		for m := range strings.SplitSeq(b2s(v), ",") {
			if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(m)), []byte(g.loopToken)) == 1 {
				return true
			}
		}
	}
	return false
}

func (g *Gateway) loopAnswer(ctx *fasthttp.RequestCtx, hasBody bool) {
	g.metrics.loops.Inc()
	if g.logGate.allow(logSubject{kind: "loop"}) {
		g.log.Error("request came back from the upstream: upstream leads to sluice itself",
			"upstreams", upstreamNames(g.config()))
	}
	g.answer(ctx, http.StatusLoopDetected, "the request came back to the gateway from its own upstream", hasBody)
}

// loopMarks is the Sluice-Loop-Mark value that goes upstream: this
// instance's mark after those of earlier sluice instances.
func (g *Gateway) loopMarks(h *fasthttp.RequestHeader) string {
	var marks []string
	for k, v := range h.All() {
		if !isLoopHeader(b2s(k)) {
			continue
		}
		for m := range strings.SplitSeq(b2s(v), ",") {
			if m = strings.TrimSpace(m); isMark(m) {
				marks = append(marks, m)
			}
		}
	}
	if len(marks) == 0 {
		return g.loopToken
	}
	// The nearest hops' marks are kept: a caller's marks come first and
	// must not push out those of the instances the request went through.
	marks = marks[max(0, len(marks)-(maxMarks-1)):]
	return strings.Join(append(marks, g.loopToken), ", ")
}
