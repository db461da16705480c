//go:build !race

package fastfront

import (
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/decision"
)

// Telling Options.Finished of a request allocates nothing: the Response
// goes by value, where a pointer handed to the function value would escape
// to the heap, one allocation per request (BenchmarkRun in gateway/
// measures the whole path). The race detector allocates of its own, hence
// the build tag.
func TestFinishedAllocatesNothing(t *testing.T) {
	var status int
	f := New(Options{Finished: func(_ *fasthttp.RequestCtx, _ *decision.Verdict, resp decision.Response) {
		status = resp.Status
	}})
	var ctx fasthttp.RequestCtx
	ctx.SetStatusCode(fasthttp.StatusBadRequest)
	if n := testing.AllocsPerRun(100, func() { f.logEarly(&ctx) }); n != 0 {
		t.Errorf("logEarly: %v allocations, want 0", n)
	}
	if status != fasthttp.StatusBadRequest {
		t.Errorf("Finished told of status %d, want 400", status)
	}
}
