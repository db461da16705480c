package client

import (
	"math"
	"strconv"
	"sync"
	"time"
)

// pacer keeps, per host, what the host's answers said of its quotas, and
// holds requests that would find a quota empty.
//
// For each policy a host names (a RateLimit item, or the legacy
// X-RateLimit-* trio) it keeps a lower bound of the units left: the r of
// the latest answer, less every request that the server may have counted
// after it (those still in flight, and those answered while it was on its
// way: requests sent on several connections reach the server in any
// order), less one for every request sent since. Between
// answers it refills at the policy's q/w, the sustained rate (exact for
// sluice's bucket algorithms, whose w is the time the empty bucket takes
// to refill, rounded up so that a client pacing by it is never early),
// keeping one unit in hand against the estimate's error (quota.wait).
// When an answer says r=0 nothing more is sent to the host until its t
// has passed; then one unit is known to be free. A request is sent only
// when every policy of its host has a unit: the Transport cannot know
// before it sends which of a host's policies will count it.
type pacer struct {
	mu    sync.Mutex
	hosts map[string]*hostState
}

// Bounds on the memory a pacer keeps, whatever its hosts answer.
const (
	maxHosts  = 4096 // beyond it, hosts with nothing in flight are forgotten
	maxQuotas = 16   // policies kept per host; further ones are ignored
)

// hostState is one host's pacing state, guarded by pacer.mu.
type hostState struct {
	inFlight int
	finished uint64    // requests done so far, answered or not
	until    time.Time // Retry-After: nothing is sent before
	quotas   map[quotaKey]*quota
	changed  chan struct{} // closed, and replaced, when an answer arrives
}

// quota is what is known of one policy of a host.
type quota struct {
	level float64   // units known free at `at` (negative: owed)
	at    time.Time // from when level holds; nothing is sent before it
	rate  float64   // units per second, q/w; 0 when the policy (its w) is not known
	limit float64   // q; 0 when not known
}

// levelAt returns the units free at now, which is not before q.at.
func (q *quota) levelAt(now time.Time) float64 {
	l := q.level + q.rate*now.Sub(q.at).Seconds()
	if q.limit > 0 {
		l = min(l, max(q.limit, q.level)) // refill stops at q
	}
	return l
}

// hold is why a request waits: the policy (or Retry-After) and how long; a
// wait of waitForAnswer waits for an answer to arrive.
type hold struct {
	wait   time.Duration
	policy quotaKey
	retry  bool // Retry-After holds the host
}

// what names the hold in a *WaitError.
func (h hold) what() string {
	switch {
	case h.retry:
		return "Retry-After"
	case h.policy.legacy:
		return "X-RateLimit-Remaining"
	}
	return "RateLimit policy " + strconv.Quote(h.policy.name)
}

// waitForAnswer is the wait for a policy of unknown rate whose known units
// are spent: the next answer tells more.
const waitForAnswer time.Duration = math.MaxInt64

// acquire takes a unit of every quota of host at now and counts a request
// in flight, whose ticket done needs; when a quota lacks a unit, it
// returns the hold instead (and takes nothing) and the channel that an
// answer closes.
func (p *pacer) acquire(host string, now time.Time) (ticket uint64, h hold, changed <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	hs := p.host(host)
	if now.Before(hs.until) {
		return 0, hold{wait: hs.until.Sub(now), retry: true}, hs.changed
	}
	for k, q := range hs.quotas {
		if w := q.wait(now, hs.inFlight); w > h.wait {
			h = hold{wait: w, policy: k}
		}
	}
	if h.wait > 0 {
		return 0, h, hs.changed
	}
	for _, q := range hs.quotas {
		q.level, q.at = q.levelAt(now)-1, now
	}
	hs.inFlight++
	return hs.finished, hold{}, nil
}

// wait returns how long until q has a unit to spend, 0 if it has one now.
// A policy whose rate is known keeps one unit in hand (when its q is 2 or
// more): its refill between answers is an estimate, exact for a bucket
// but early for a window that frees nothing until it ends, and the unit
// in hand absorbs that error, so an answer of r=0 (and its hold until t)
// comes only when another caller spends the quota. A policy of unknown
// rate whose known units are spent waits for an answer, or, with nothing
// in flight to answer, sends one request to learn more.
func (q *quota) wait(now time.Time, inFlight int) time.Duration {
	if now.Before(q.at) {
		return q.at.Sub(now)
	}
	need := 1.0
	if q.rate > 0 && q.limit >= 2 {
		need = 2
	}
	l := q.levelAt(now)
	switch {
	case l >= need:
		return 0
	case q.rate > 0:
		secs := min((need-l)/q.rate, maxSeconds)
		return max(time.Duration(secs*float64(time.Second)), time.Microsecond)
	case inFlight == 0:
		return 0
	}
	return waitForAnswer
}

// host returns host's state, making it. The caller holds p.mu.
func (p *pacer) host(host string) *hostState {
	if hs, ok := p.hosts[host]; ok {
		return hs
	}
	if p.hosts == nil {
		p.hosts = make(map[string]*hostState)
	}
	if len(p.hosts) >= maxHosts {
		for k, hs := range p.hosts {
			if hs.inFlight == 0 {
				delete(p.hosts, k)
			}
		}
	}
	hs := &hostState{quotas: make(map[quotaKey]*quota), changed: make(chan struct{})}
	p.hosts[host] = hs
	return hs
}

// cancel gives back what acquire took for a request that was not sent.
func (p *pacer) cancel(host string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	hs := p.host(host)
	for _, q := range hs.quotas {
		q.level++ // taken by acquire, or counted among the others by learn
	}
	hs.inFlight--
	hs.wake()
}

// done ends the request with ticket to host at now and learns from its
// answer: the quotas it reports (nil for no answer), and a Retry-After hold
// (0: none).
func (p *pacer) done(host string, ticket uint64, now time.Time, quotas []quotaInfo, retryAfter time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	hs := p.host(host)
	// What the server may have counted after this request: the others in
	// flight, and those done since it was sent.
	others := float64(hs.inFlight-1) + float64(hs.finished-ticket)
	for _, qi := range quotas {
		q := hs.quotas[qi.key]
		if q == nil {
			if len(hs.quotas) == maxQuotas {
				continue
			}
			q = &quota{at: now}
			hs.quotas[qi.key] = q
		}
		q.learn(qi, now, others)
	}
	if until := now.Add(retryAfter); retryAfter > 0 && until.After(hs.until) {
		hs.until = until
	}
	hs.inFlight--
	hs.finished++
	hs.wake()
}

// learn updates q from an answer at now, with others requests that the
// server may have counted after it. The answer's bound replaces what q
// knew: the server's count is the authority (other callers may share the
// quota, and for a window algorithm q/w is only the average rate).
func (q *quota) learn(qi quotaInfo, now time.Time, others float64) {
	if qi.limit > 0 {
		q.limit = float64(qi.limit)
	}
	if qi.limit > 0 && qi.window > 0 { // the legacy trio names no window: no rate
		q.rate = float64(qi.limit) / qi.window.Seconds()
	}
	if qi.remaining > 0 {
		q.level, q.at = float64(qi.remaining)-others, now
		return
	}
	// Empty: one unit is free after t, less what those in flight may take.
	q.level, q.at = 1-others, now.Add(emptyFor(qi))
}

// maxEmptyHold bounds how long an answer with r=0 and no policy of the
// same name keeps a host's requests from being sent (a t of up to 68
// years reads as a number): past it the host is asked again, and its
// next answer says how things stand.
const maxEmptyHold = time.Hour

// emptyFor is how long an empty quota stays empty: its t, at most the
// policy's window (no quota of sluice's algorithms, nor of the RateLimit
// fields' definition, stays empty for longer than its window: a longer t
// is the server's mistake), or maxEmptyHold without a policy.
func emptyFor(qi quotaInfo) time.Duration {
	if qi.window > 0 {
		return min(qi.next, qi.window)
	}
	return min(qi.next, maxEmptyHold)
}

// wake tells the requests waiting on hs that something changed.
func (hs *hostState) wake() {
	close(hs.changed)
	hs.changed = make(chan struct{})
}
