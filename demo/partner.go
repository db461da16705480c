package demo

import (
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Answer is one HTTP answer as a partner program saw it.
type Answer struct {
	// Request is the partner's request number, counted from 1.
	Request int
	// At is when the request was sent, measured from the partners' start.
	At time.Duration
	// StatusCode is the answer's status code, such as 429.
	StatusCode int
	// Status is the status line's code and text, such as "429 Too Many Requests".
	Status string
	// Header holds the answer's headers.
	Header http.Header
	// Body is the answer's body (at most 64 KiB).
	Body []byte
}

// PartnerResult is what one partner program sent and what became of it.
type PartnerResult struct {
	// ID is the partner's client id in sluice's configuration.
	ID string
	// Sent counts the requests the program sent.
	Sent int
	// Passed counts the requests sluice let through that the claims service
	// answered (2xx, or 403/404 when the partner may not see the claim).
	Passed int
	// Forbidden counts the passed requests the claims service refused with 403.
	Forbidden int
	// Limited counts the requests sluice rejected with 429.
	Limited int
	// Failed counts everything else: other statuses, timeouts, connection errors.
	Failed int
	// Reached is how many of the partner's requests reached the claims
	// service, as the service itself counted them.
	Reached int
	// P50 and P99 are the median and 99th percentile latency of the answers
	// the partner got (from sending the request to reading the body).
	P50, P99 time.Duration
}

// partner is one partner firm's program: it asks for claims at a steady pace
// and never looks at Retry-After.
type partner struct {
	id, key   string
	every     time.Duration
	own       []string // the partner's own claims, asked for in turn
	probeAt   int      // request number that asks for foreign instead; 0: never
	foreign   string   // a claim of another partner
	client    *http.Client
	base      string // sluice's URL
	onAnswer  func(p *partner, a *Answer)
	mu        sync.Mutex
	res       PartnerResult
	latencies []time.Duration
	first429  *Answer
}

// requestTimeout bounds every request of a partner program.
const requestTimeout = 5 * time.Second

// run sends one request every p.every from start on, as long as the next
// send is less than d after start, and stops early when ctx ends. Requests
// in flight when ctx ends are completed (bounded by requestTimeout), so
// that every request sent has an outcome.
func (p *partner) run(ctx context.Context, start time.Time, d time.Duration) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	reqCtx := context.WithoutCancel(ctx)
	for n := 0; time.Duration(n)*p.every < d; n++ {
		if !waitUntil(ctx, timer, start.Add(time.Duration(n)*p.every)) {
			return
		}
		p.send(reqCtx, n+1, time.Since(start))
	}
}

// waitUntil waits on timer until t and reports true then; false when ctx
// ends first, or has ended when t is already past. The callers pace their
// requests with it.
func waitUntil(ctx context.Context, timer *time.Timer, t time.Time) bool {
	if wait := time.Until(t); wait > 0 {
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return true
		}
	}
	return ctx.Err() == nil
}

// send sends request number n and records its outcome.
func (p *partner) send(ctx context.Context, n int, at time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	id := p.own[(n-1)%len(p.own)]
	if n == p.probeAt {
		id = p.foreign
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/claims/"+id, nil)
	if err != nil {
		p.record(nil, 0)
		return
	}
	req.Header.Set(keyHeader, p.key)
	t0 := time.Now()
	resp, err := p.client.Do(req)
	if err != nil {
		p.record(nil, 0)
		return
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close() // a body read to its end closes cleanly
	if err != nil {
		p.record(nil, 0)
		return
	}
	a := &Answer{Request: n, At: at, StatusCode: resp.StatusCode, Status: resp.Status, Header: resp.Header, Body: body}
	p.record(a, time.Since(t0))
	if n == p.probeAt || (resp.StatusCode == http.StatusTooManyRequests && p.isFirst429(a)) {
		p.onAnswer(p, a)
	}
}

// record counts one request's outcome; a is nil if there was no answer.
func (p *partner) record(a *Answer, latency time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.res.Sent++
	if a == nil {
		p.res.Failed++
		return
	}
	p.latencies = append(p.latencies, latency)
	switch code := a.StatusCode; {
	case code == http.StatusTooManyRequests:
		p.res.Limited++
	case code == http.StatusForbidden || code == http.StatusNotFound:
		p.res.Passed++
		p.res.Forbidden += btoi(code == http.StatusForbidden)
	case code >= 200 && code < 300:
		p.res.Passed++
	default:
		p.res.Failed++
	}
}

// isFirst429 reports whether a is the first 429 the partner got, and keeps it.
func (p *partner) isFirst429(a *Answer) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.first429 != nil {
		return false
	}
	p.first429 = a
	return true
}

// snapshot returns the partner's figures so far, with latency percentiles.
func (p *partner) snapshot() PartnerResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.res
	r.ID = p.id
	lat := slices.Clone(p.latencies)
	slices.Sort(lat)
	r.P50, r.P99 = percentile(lat, 50), percentile(lat, 99)
	return r
}

// percentile is the nearest-rank q-th percentile of sorted; 0 if empty.
func percentile(sorted []time.Duration, q int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (q*len(sorted) + 99) / 100 // ceil(q/100 * n), at least 1
	return sorted[max(rank, 1)-1]
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
