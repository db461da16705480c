package fastproxy

import (
	"strconv"
	"unicode/utf8"

	"github.com/valyala/fasthttp"
)

// WriteProblem answers ctx with an RFC 9457 application/problem+json body
// and Cache-Control: no-store, as httplimit.WriteProblem does on net/http.
// Headers already set on the response are kept.
func WriteProblem(ctx *fasthttp.RequestCtx, status int, detail string) {
	b := append(make([]byte, 0, 128), `{"title":`...)
	b = appendJSONString(b, fasthttp.StatusMessage(status))
	b = strconv.AppendInt(append(b, `,"status":`...), int64(status), 10)
	b = appendJSONString(append(b, `,"detail":`...), detail)
	b = append(b, '}', '\n')
	ctx.Response.ResetBody()
	ctx.SetStatusCode(status)
	ctx.Response.Header.SetContentType("application/problem+json")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.SetBodyRaw(b)
}

// appendJSONString appends s as a JSON string, escaping as encoding/json.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20 || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029:
			b = append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}
