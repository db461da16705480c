package fastfront

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
// (the proxy drops the header from responses: NewProxy), and a caller's copies
// are forwarded only as far as they look like marks, the nearest hops'
// first, at most maxMarks with this instance's.
const loopHeader = "Sluice-Loop-Mark"

// loopHeaders is loopHeader as the proxy strips it in every spelling an
// upstream reads as the same (Sluice_Loop_Mark too: one header to a
// CGI-style upstream): from a caller's request (Forwarding.Strip, the
// marks going on in its place), and from an upstream's answer echoing
// request headers (Proxy.StripResponse: NewProxy).
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
func (f *Front) looped(h *fasthttp.RequestHeader) bool {
	for k, v := range h.All() {
		if !isLoopHeader(b2s(k)) {
			continue
		}
		for m := range strings.SplitSeq(b2s(v), ",") {
			if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(m)), []byte(f.loopToken)) == 1 {
				return true
			}
		}
	}
	return false
}

func (f *Front) loopAnswer(ctx *fasthttp.RequestCtx, snap *Snapshot, hasBody bool) {
	inc(f.counters.Loops)
	if f.logs("loop", "") {
		f.log.Error("request came back from the upstream: upstream leads to sluice itself",
			"upstreams", upstreamNames(snap))
	}
	f.answer(ctx, http.StatusLoopDetected, "the request came back to the gateway from its own upstream", hasBody)
}

// loopMarks is the Sluice-Loop-Mark value that goes upstream: this
// instance's mark after those of earlier sluice instances.
func (f *Front) loopMarks(h *fasthttp.RequestHeader) string {
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
		return f.loopToken
	}
	// The nearest hops' marks are kept: a caller's marks come first and
	// must not push out those of the instances the request went through.
	marks = marks[max(0, len(marks)-(maxMarks-1)):]
	return strings.Join(append(marks, f.loopToken), ", ")
}

// upstreamNames lists the services, for logs.
func upstreamNames(snap *Snapshot) string {
	names := make([]string, 0, len(snap.Routes))
	for _, rt := range snap.Routes {
		names = append(names, rt.Name+"="+rt.URL.Redacted())
	}
	return strings.Join(names, ", ")
}
