package live

import (
	"net/http"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/store"
)

// maxClients is how many client ids a counter remembers being refused on
// it: enough to say that several share it.
const maxClients = 4

// refusal is a client id refused on a counter, and when last.
type refusal struct {
	client string
	last   int64
}

// entry is one listed counter of a rule.
type entry struct {
	key     uint64 // the hash of the store key
	gen     uint32 // how many times the entry was released: victims ask
	client  string // the client id of its last request (policy names: kept, not copied)
	counted string // Report.CountedBy when it was listed
	limit   int64
	source  string // where limit comes from (decision.Report.Source)
	// used is the share of the limit used at usedAt; reset how long from
	// then until the counter is back at its full limit.
	used          float64
	usedAt, reset int64
	// retryUntil is when the Retry-After told with the last 429 on this
	// counter ends, told the client it was told to.
	retryUntil int64
	told       string
	lastWindow int64 // when the last distinct window of patient refusals began
	// earlier counts early requests per whole period (slot: t/period),
	// this one and the one before: a caller early in the last period but
	// one is not yet one that waits as told.
	earlier [2]struct {
		slot int64
		n    uint32
	}
	last int64
	// count is the Space-Saving count of refusals, halved for each minute
	// since epoch (a minute number).
	count             uint64
	epoch             int64
	inRefused, inUsed bool
	minute            minuteRing
	period            periodRing
	refusedBy         [maxClients]refusal
}

// ruleState is the live state of one rule: its totals, its listed
// counters, and the two sketches over them. mu guards all but name.
type ruleState struct {
	name string

	mu      sync.Mutex
	info    RuleInfo
	top     int
	width   int64 // of the period's buckets
	period  int64
	seconds secondRing
	index   map[uint64]*entry
	pool    []*entry // every entry ever made, listed or free
	free    []*entry
	// How many entries each sketch lists, and the next each evicts.
	nRefused, nUsed             int
	refusedVictims, usedVictims victims
}

func newRuleState(info RuleInfo, opts Options) *ruleState {
	return &ruleState{name: info.Name, info: info, top: opts.Top, period: int64(opts.Period),
		width: int64(opts.Period) / periodBuckets, index: make(map[uint64]*entry)}
}

func (rs *ruleState) setInfo(info RuleInfo) {
	rs.mu.Lock()
	rs.info = info
	rs.mu.Unlock()
}

// observe records rule result j of rep, decided at t, whose store key
// hashes to h.
func (rs *ruleState) observe(t int64, rep *decision.Report, j int, h uint64) {
	r := &rep.Rules[j]
	var limited bool
	switch r.Outcome {
	case decision.Allowed, decision.Delayed:
	case decision.Limited, decision.ShadowLimited:
		limited = true
	default: // exempt, not spent, failed: nothing counted
		return
	}
	used := usedShare(&r.Decision)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.seconds.add(t, limited)
	if r.Key == (store.Key{}) {
		return
	}
	e := rs.index[h]
	if e == nil {
		if e = rs.admit(h, t, limited, used); e == nil {
			return
		}
		e.client, e.counted = rep.Client, rep.CountedBy(j) // once per listed counter: it allocates
	} else {
		rs.promote(e, t, limited, used)
	}
	rs.record(e, t, rep, j, used)
}

// record updates a listed counter with one request's result r.
func (rs *ruleState) record(e *entry, t int64, rep *decision.Report, j int, used float64) {
	r := &rep.Rules[j]
	limited := r.Outcome == decision.Limited || r.Outcome == decision.ShadowLimited
	e.client, e.limit, e.source, e.last = rep.Client, r.Decision.Limit, rep.Source(j), t
	e.used, e.usedAt, e.reset = used, t, int64(r.Decision.Reset)
	e.minute.add(t, limited)
	soon := e.told != "" && e.told == rep.Client && t < e.retryUntil
	if soon {
		e.period.add(t, rs.width, early)
		e.countEarly(t, rs.period)
	}
	if limited && e.inRefused {
		e.count = decayed(e.count, e.epoch, t) + 1
		e.epoch = t / int64(time.Minute)
	}
	if r.Outcome != decision.Limited || rep.Status != http.StatusTooManyRequests {
		return
	}
	e.period.add(t, rs.width, refused)
	if !soon && t >= e.lastWindow+max(int64(rs.info.window), int64(time.Second)) {
		e.period.add(t, rs.width, patient)
		e.lastWindow = t
	}
	e.retryUntil, e.told = t+int64(rep.RetryAfter), rep.Client
	e.refusedOn(rep.Client, t)
}

// countEarly counts an early request at t in e.earlier.
func (e *entry) countEarly(t, period int64) {
	slot := t / period
	b := &e.earlier[slot%2]
	if b.slot != slot {
		b.slot, b.n = slot, 0
	}
	b.n++
}

// earlyBefore is how many early requests e counted in the current whole
// period and the one before it.
func (e *entry) earlyBefore(t, period int64) uint64 {
	slot := t / period
	var n uint64
	for _, b := range e.earlier {
		if b.slot == slot || b.slot == slot-1 {
			n += uint64(b.n)
		}
	}
	return n
}

// refusedOn remembers that client was refused on e at t, in the place of
// the client refused longest ago if e remembers maxClients already.
func (e *entry) refusedOn(client string, t int64) {
	oldest := 0
	for i := range e.refusedBy {
		c := &e.refusedBy[i]
		if c.client == client || c.client == "" {
			c.client, c.last = client, t
			return
		}
		if c.last < e.refusedBy[oldest].last {
			oldest = i
		}
	}
	e.refusedBy[oldest] = refusal{client, t}
}

// decayed is a count kept since minute epoch, halved for each minute
// from then to t.
func decayed(count uint64, epoch, t int64) uint64 {
	shift := t/int64(time.Minute) - epoch
	switch {
	case shift <= 0:
		return count
	case shift >= 64:
		return 0
	}
	return count >> shift
}

// usedNow is e's share of its limit used at t: the share at its last
// request, falling linearly to 0 by the time its counter is back at its
// full limit.
func (e *entry) usedNow(t int64) float64 {
	if e.reset <= 0 {
		return e.used
	}
	left := 1 - float64(t-e.usedAt)/float64(e.reset)
	return e.used * min(max(left, 0), 1)
}
