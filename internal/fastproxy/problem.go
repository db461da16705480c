package fastproxy

import (
	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/internal/problem"
)

// WriteProblem answers ctx with an RFC 9457 application/problem+json body
// (internal/problem, the body every front writes) and
// Cache-Control: no-store, as httplimit.WriteProblem does on net/http.
// Headers already set on the response are kept.
func WriteProblem(ctx *fasthttp.RequestCtx, status int, detail string) {
	b := problem.Append(make([]byte, 0, 128), status, fasthttp.StatusMessage(status), detail)
	ctx.Response.ResetBody()
	ctx.SetStatusCode(status)
	ctx.Response.Header.SetContentType("application/problem+json")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.SetBodyRaw(b)
}
