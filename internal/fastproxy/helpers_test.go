package fastproxy_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/internal/fastproxy"
)

// TestMain checks that no goroutine outlives the tests but fasthttp's own
// (fastproxy.Lingering).
func TestMain(m *testing.M) {
	var opts []goleak.Option
	for _, f := range fastproxy.Lingering {
		opts = append(opts, goleak.IgnoreAnyFunction(f))
	}
	goleak.VerifyTestMain(m, opts...)
}

// seen is one request as the upstream received it.
type seen struct {
	line   string // "METHOD target"
	host   string
	header http.Header // without Accept-Encoding, User-Agent (Go's client adds them)
	body   int64       // bytes of body read
}

// upstream records what it receives and answers with answer (default:
// 200 "upstream ok"), after reading the body to its end.
type upstream struct {
	*httptest.Server
	mu     sync.Mutex
	got    []seen
	answer http.HandlerFunc
}

func newUpstream(t *testing.T, answer http.HandlerFunc) *upstream {
	u := &upstream{answer: answer}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	if r.URL.Path == "/sentinel" {
		_, _ = io.WriteString(w, sentinelBody)
		return
	}
	u.mu.Lock()
	u.got = append(u.got, seen{line: r.Method + " " + r.RequestURI, host: r.Host, header: r.Header.Clone(), body: n})
	u.mu.Unlock()
	if u.answer != nil {
		u.answer(w, r)
		return
	}
	_, _ = io.WriteString(w, "upstream ok")
}

const sentinelBody = "upstream ok /sentinel"

func (u *upstream) last(t *testing.T) seen {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.got) == 0 {
		t.Fatal("the upstream received nothing")
	}
	return u.got[len(u.got)-1]
}

func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.got)
}

// stand is a fasthttp server in front of an upstream, proxying every
// request that Refuse lets through as fwd says.
type stand struct {
	url   string
	proxy *fastproxy.Proxy
	fwd   fastproxy.Forwarding
	body  time.Duration // the body timeout
	mu    sync.Mutex
	outs  []fastproxy.Outcome
	done  func(error) // Serve's (nil: none); set with mu held
}

type standOptions struct {
	fwd             fastproxy.Forwarding
	upstreamTimeout time.Duration // default 10s
	bodyTimeout     time.Duration // default 10s
	headerTimeout   time.Duration // default 10s
}

func startStand(t *testing.T, up *url.URL, o standOptions) *stand {
	t.Helper()
	s := &stand{proxy: fastproxy.New(up, or(o.upstreamTimeout, 10*time.Second)), fwd: o.fwd,
		body: or(o.bodyTimeout, 10*time.Second)}
	s.proxy.StripResponse = []string{"Sluice-Loop-Mark"}
	srv := fastproxy.NewServer(s.handle, fastproxy.Timeouts{ReadHeader: or(o.headerTimeout, 10*time.Second),
		Idle: 10 * time.Second}, quiet{}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.url = "http://" + ln.Addr().String()
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Shutdown()
		<-done
		s.proxy.Close()
	})
	return s
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

func (s *stand) handle(ctx *fasthttp.RequestCtx) {
	if status, detail := fastproxy.Refuse(&ctx.Request.Header); status != 0 {
		fastproxy.WriteProblem(ctx, status, detail)
		ctx.SetConnectionClose()
		return
	}
	start := time.Now()
	fastproxy.SetBodyDeadline(ctx, start.Add(s.body))
	fwd := s.fwd
	fwd.Peer = ctx.RemoteAddr().(*net.TCPAddr).AddrPort().Addr()
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	out, _ := s.proxy.Serve(ctx, &fwd, fastproxy.NewBody(ctx, start, start.Add(s.body)), done)
	s.mu.Lock()
	s.outs = append(s.outs, out)
	s.mu.Unlock()
}

func (s *stand) outcomes() []fastproxy.Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.outs)
}

// reply is one response read off a raw connection.
type reply struct {
	status int
	header http.Header
	body   string
}

// exchange writes raw on a new connection, then a sentinel request that
// closes it, and returns every response before the sentinel's.
func (s *stand) exchange(t *testing.T, raw string) []reply {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	go func() {
		_, _ = io.WriteString(c, raw+"GET /sentinel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	}()
	return readReplies(t, bufio.NewReader(c))
}

func readReplies(t *testing.T, br *bufio.Reader) []reply {
	t.Helper()
	var out []reply
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Errorf("no answer in time after %d", len(out))
			}
			return out
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 200 {
			continue // 100 Continue: the answer follows
		}
		if string(body) == sentinelBody {
			return out
		}
		out = append(out, reply{status: resp.StatusCode, header: resp.Header, body: string(body)})
		if resp.Close {
			return out
		}
	}
}

func statuses(rs []reply) []int {
	var s []int
	for _, r := range rs {
		s = append(s, r.status)
	}
	return s
}

// xff is a Forwarding reading callers from X-Forwarded-For.
var xff = fastproxy.Forwarding{}

func dial(t *testing.T, s *stand) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	return c
}

func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
