package client

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/clock"
)

// Defaults of Transport's fields.
const (
	DefaultMaxWait    = 30 * time.Second
	DefaultMaxRetries = 3
	DefaultMinBackoff = 100 * time.Millisecond
)

// Transport is an http.RoundTripper that behaves toward rate-limited
// servers: it paces itself on their RateLimit headers, honours Retry-After,
// retries only what is safe to retry and only within a budget, and can
// hold calls to a dependency to an outbound limit of its own. The zero
// Transport is ready to use and wraps http.DefaultTransport:
//
//	c := &http.Client{Transport: &client.Transport{}}
//
// Set the fields before the first request and do not change them after;
// a Transport is safe for concurrent use and must not be copied after its
// first use (it keeps the hosts' quotas and the retry budget).
type Transport struct {
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper

	// MaxWait bounds every single wait: for a Retry-After, a backoff, a
	// RateLimit hold, the outbound limit. A request that would have to wait
	// longer is not held: a 429 or 503 is returned as it came, and a
	// request not yet sent fails at once with a *WaitError. The request's
	// context deadline bounds each wait the same way. 0 means
	// DefaultMaxWait (30s).
	MaxWait time.Duration

	// MaxRetries is how many times one request is retried at most after a
	// 429 or 503; 0 means DefaultMaxRetries (3), a negative value none.
	MaxRetries int

	// MinBackoff is the first retry's wait when the answer says nothing
	// usable of when to retry (no Retry-After, or a malformed one); it
	// doubles with every retry up to MaxWait, and half of it is random
	// (equal jitter). 0 means DefaultMinBackoff (100ms).
	MinBackoff time.Duration

	// Budget bounds the retries of all requests together; its zero value
	// is the default (a tenth of the requests).
	Budget RetryBudget

	// Outbound, when set, is a limit of the caller's own on every request
	// this Transport sends: a rate (shared by a fleet in Redis, if its
	// store is), and a cap on requests in flight that follows the
	// dependency's health. Use one Transport per dependency.
	Outbound *Outbound

	// Clock tells the time and times the waits; nil means clock.Real.
	Clock clock.Clock

	// Rand returns a uniform number in [0, 1) for jitter; nil means
	// math/rand/v2's Float64.
	Rand func() float64

	once sync.Once
	s    *state
}

// state is what a Transport keeps between requests, made on first use.
type state struct {
	base       http.RoundTripper
	clk        clock.Clock
	rnd        func() float64
	maxWait    time.Duration
	maxRetries int
	minBackoff time.Duration
	budget     *budget
	pacer      pacer
	out        *outbound // nil without Outbound
	outErr     error     // an Outbound that cannot work: every request fails with it
}

// init makes the Transport's state from its fields, once.
func (t *Transport) init() *state {
	t.once.Do(func() {
		s := &state{base: t.Base, clk: t.Clock, rnd: t.Rand, maxWait: t.MaxWait,
			maxRetries: t.MaxRetries, minBackoff: t.MinBackoff}
		if s.base == nil {
			s.base = http.DefaultTransport
		}
		if s.clk == nil {
			s.clk = clock.Real{}
		}
		if s.rnd == nil {
			s.rnd = rand.Float64
		}
		if s.maxWait <= 0 {
			s.maxWait = DefaultMaxWait
		}
		if s.maxRetries == 0 {
			s.maxRetries = DefaultMaxRetries
		}
		if s.minBackoff <= 0 {
			s.minBackoff = DefaultMinBackoff
		}
		s.budget = newBudget(t.Budget)
		if t.Outbound != nil {
			s.out, s.outErr = newOutbound(*t.Outbound, s.clk, s.maxWait)
		}
		t.s = s
	})
	return t.s
}

// RoundTrip sends req, paced and limited as the Transport's doc says, and
// retries it after a 429 or 503 when that is safe: its method is
// idempotent (GET, HEAD, OPTIONS, TRACE, PUT, DELETE) or it carries an
// Idempotency-Key, its body can be sent again (none, or GetBody set), the
// retry budget allows it, and the wait fits in MaxWait and the context's
// deadline. Otherwise the 429 or 503 is returned as it came.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	s := t.init()
	if s.outErr != nil {
		closeBody(req)
		return nil, s.outErr
	}
	s.budget.deposit()
	retryable := s.maxRetries > 0 && canRetry(req)
	for attempt := 0; ; attempt++ {
		r := req
		if attempt > 0 {
			var err error
			if r, err = rewind(req); err != nil {
				return nil, err
			}
		}
		resp, err := s.send(r)
		if err != nil || !retryable || attempt == s.maxRetries || !retryStatus(resp.StatusCode) {
			return resp, err
		}
		wait, ok := s.retryWait(req.Context(), resp, attempt)
		if !ok || !s.budget.withdraw() {
			return resp, nil
		}
		discard(resp)
		if _, err := s.sleep(req.Context(), wait, nil); err != nil {
			return nil, err
		}
	}
}

// CloseIdleConnections closes the idle connections of Base when it can.
func (t *Transport) CloseIdleConnections() {
	type closer interface{ CloseIdleConnections() }
	if c, ok := t.init().base.(closer); ok {
		c.CloseIdleConnections()
	}
}

// send sends one attempt: it waits for the host's quotas and the outbound
// limit, sends, and learns from the answer.
func (s *state) send(req *http.Request) (*http.Response, error) {
	host := req.URL.Host
	ticket, err := s.waitTurn(req.Context(), host)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	release, err := s.out.acquire(req.Context(), host, s)
	if err != nil {
		s.pacer.cancel(host)
		closeBody(req)
		return nil, err
	}
	start := s.clk.Now()
	resp, err := s.base.RoundTrip(req)
	now := s.clk.Now()
	release(req.Context(), resp, err, now.Sub(start))
	if err != nil {
		s.pacer.done(host, ticket, now, nil, 0)
		return nil, err
	}
	var hold time.Duration
	if retryStatus(resp.StatusCode) {
		if ra, ok := parseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
			hold = min(ra, s.maxWait)
		}
	}
	s.pacer.done(host, ticket, now, parseQuotas(resp.Header, now), hold)
	return resp, nil
}

// waitTurn waits until every quota of host has a unit and takes one.
func (s *state) waitTurn(ctx context.Context, host string) (uint64, error) {
	for {
		ticket, h, changed := s.pacer.acquire(host, s.clk.Now())
		if changed == nil {
			return ticket, nil
		}
		if h.wait == waitForAnswer { // no time is known: wait for an answer
			bound := min(s.maxWait, untilDeadline(ctx))
			if bound <= 0 {
				return 0, &WaitError{Host: host, Cause: h.what(), Bound: "the context deadline"}
			}
			answered, err := s.sleep(ctx, bound, changed)
			if err != nil {
				return 0, err
			}
			if !answered {
				return 0, &WaitError{Host: host, Cause: h.what(), Wait: bound, Bound: "no answer came within it"}
			}
			continue
		}
		if err := s.check(ctx, host, h.what(), h.wait); err != nil {
			return 0, err
		}
		if _, err := s.sleep(ctx, h.wait, changed); err != nil {
			return 0, err
		}
	}
}

// retryWait returns how long to wait before retrying after resp, and
// false when the retry should not be made: the wait would pass MaxWait or
// the deadline of ctx.
func (s *state) retryWait(ctx context.Context, resp *http.Response, attempt int) (time.Duration, bool) {
	var wait time.Duration
	if ra, ok := whenToRetry(resp.Header, s.clk.Now()); ok {
		if ra > s.maxWait {
			return 0, false // the server asks for more than the caller allows
		}
		wait = ra + time.Duration(s.rnd()*float64(ra)/10) // up to a tenth later
	} else {
		b := s.minBackoff << min(attempt, 30)
		if b <= 0 || b > s.maxWait {
			b = s.maxWait
		}
		wait = b/2 + time.Duration(s.rnd()*float64(b/2))
	}
	wait = min(wait, s.maxWait)
	return wait, wait <= untilDeadline(ctx)
}

// whenToRetry is the answer's Retry-After, or, without a usable one, the
// longest t of its RateLimit items with r=0 (the hold that the pacer keeps
// anyway); ok is false when it says neither.
func whenToRetry(h http.Header, now time.Time) (time.Duration, bool) {
	if ra, ok := parseRetryAfter(h.Get("Retry-After"), now); ok && ra > 0 {
		return ra, true
	}
	var t time.Duration
	for _, q := range parseQuotas(h, now) {
		if q.remaining == 0 {
			t = max(t, q.next)
		}
	}
	return t, t > 0
}

// untilDeadline is the time left before ctx's deadline, or the longest
// duration when it has none.
func untilDeadline(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return time.Until(dl)
	}
	return 1<<63 - 1
}

// check returns a *WaitError when a wait for cause would pass MaxWait or
// the deadline of ctx.
func (s *state) check(ctx context.Context, host, cause string, wait time.Duration) error {
	switch {
	case wait > s.maxWait:
		return &WaitError{Host: host, Cause: cause, Wait: wait, Bound: "MaxWait " + s.maxWait.String()}
	case wait > untilDeadline(ctx):
		return &WaitError{Host: host, Cause: cause, Wait: wait, Bound: "the context deadline"}
	}
	return nil
}

// sleep waits d on the Transport's clock, or until changed is closed (nil:
// never; changedFirst then true), or ctx ends (its error then).
func (s *state) sleep(ctx context.Context, d time.Duration, changed <-chan struct{}) (changedFirst bool, err error) {
	if d <= 0 {
		return false, ctx.Err()
	}
	tk := s.clk.NewTicker(d)
	defer tk.Stop()
	select {
	case <-tk.C():
		return false, nil
	case <-changed:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// closeBody closes the body of a request that will not be sent, as a
// RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// maxDrain is how much of a refused answer's body is read so that its
// connection can be reused; a longer body's connection is closed.
const maxDrain = 64 << 10

// discard reads and closes the body of an answer that will be retried.
func discard(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)
	_ = resp.Body.Close()
}
