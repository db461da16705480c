package steering

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/clock"
)

// Defaults of Options.
const (
	// DefaultResync is how often an instance reads the State again even
	// when no change was announced: a lost announcement, or a Redis that
	// restarted, is repaired within it.
	DefaultResync = 500 * time.Millisecond
	// DefaultAuditSize is how many audit records are kept.
	DefaultAuditSize = 1000
	// commitTries bounds a change's attempts when other changes keep
	// coming first; each waits a little longer, at random, before the next.
	commitTries = 32
	// transientTries is how many of those may fail on the store's error
	// (a connection broken by a Redis restart) before a change is refused.
	transientTries = 2
)

// Options configure a Manager. Backend is required.
type Options struct {
	Backend Backend
	// Clock is the local clock, against which the backend's is measured.
	// Default clock.Real{}.
	Clock clock.Clock
	// Check says whether next, a State about to be committed because of
	// the change to entry, can be applied: an error (a *FieldError names
	// the field) refuses the change, and nothing is committed. Nil
	// accepts everything.
	Check func(next State, entry Entry) error
	// Apply is called with the State in force, without what has expired,
	// each time it changes (and once by the first Sync), never twice at
	// once.
	Apply func(State)
	// Resync is how often the State is read again. Default DefaultResync.
	Resync time.Duration
	// AuditSize is how many audit records are kept. Default
	// DefaultAuditSize.
	AuditSize int
	// MaxTTL, above 0, is the longest ttl a change may have; a change
	// then needs one. 0: any ttl, or none (until removed).
	MaxTTL time.Duration
	// Logger gets a line per change and per expiry. Default slog.Default().
	Logger *slog.Logger
}

// Manager applies the State the Backend holds and makes changes to it.
// It is safe for concurrent use.
type Manager struct {
	opts  Options
	poke  chan struct{}
	apply sync.Mutex // Apply, one call at a time, in version order

	mu       sync.Mutex
	stored   State         // the newest State read or committed, expired parts included
	inForce  State         // what Apply was last given
	applied  bool          // Apply was called at least once
	skew     time.Duration // the backend's clock minus the local one
	synced   time.Time     // local time of the last successful read
	lastErr  error         // the last read's error; nil when it succeeded
	failedAt time.Time     // local time the reads began to fail
}

// Status is how the Manager's State is kept now.
type Status struct {
	// Version is the version of the State in force.
	Version uint64 `json:"version"`
	// Backend is "redis" (shared by every instance) or "file".
	Backend string `json:"backend"`
	// Synced is when the State was last read; Stale is true while the
	// backend cannot be read (the last State read stays in force), since
	// StaleSince, with Error.
	Synced     time.Time `json:"synced,omitzero"`
	Stale      bool      `json:"stale"`
	StaleSince time.Time `json:"stale_since,omitzero"`
	Error      string    `json:"error,omitempty"`
}

// FieldError refuses a change for one field of its request.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// ErrNotFound is the error of a removal that found nothing to remove.
var ErrNotFound = errors.New("steering: no such override or block")

// UnavailableError is the error of a change the backend could not take:
// nothing changed.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string {
	return "the runtime store cannot be reached, nothing changed: " + e.Err.Error()
}
func (e *UnavailableError) Unwrap() error { return e.Err }

// New returns a Manager for opts; Sync reads the State first, Run keeps it
// current.
func New(opts Options) *Manager {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Resync <= 0 {
		opts.Resync = DefaultResync
	}
	if opts.AuditSize <= 0 {
		opts.AuditSize = DefaultAuditSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Manager{opts: opts, poke: make(chan struct{}, 1)}
}

// Run keeps the State current until ctx ends: it reads it when another
// instance announces a change, every Resync, and when something expires.
func (m *Manager) Run(ctx context.Context) {
	stop := m.opts.Backend.Watch(m.Poke)
	defer stop()
	tick := time.NewTicker(m.opts.Resync)
	defer tick.Stop()
	expiry := time.NewTimer(time.Hour)
	defer expiry.Stop()
	for {
		_ = m.Sync(ctx)
		expiry.Reset(m.untilExpiry())
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-m.poke:
		case <-expiry.C:
		}
	}
}

// Poke makes Run read the State at once.
func (m *Manager) Poke() {
	select {
	case m.poke <- struct{}{}:
	default:
	}
}

// untilExpiry is how long until the next expiry of what is stored, on the
// local clock (an hour when nothing expires: Run reads every Resync anyway).
func (m *Manager) untilExpiry() time.Duration {
	m.mu.Lock()
	next, skew := m.stored.nextExpiry(), m.skew
	m.mu.Unlock()
	if next.IsZero() {
		return time.Hour
	}
	return max(next.Add(-skew).Sub(m.opts.Clock.Now()), time.Millisecond)
}

// Sync reads the State, removes what has expired (recording it), writes
// back the State this instance applies if the backend has lost it (a Redis
// restarted without its data), and applies the result. While the backend
// cannot be read the State in force stays, and Status says so.
func (m *Manager) Sync(ctx context.Context) error {
	st, now, err := m.opts.Backend.Load(ctx)
	local := m.opts.Clock.Now()
	m.mu.Lock()
	if err != nil {
		if m.lastErr == nil {
			m.failedAt = local
			m.opts.Logger.Warn("runtime overrides cannot be read; the last ones read stay in force", "err", err.Error())
		}
		m.lastErr = err
		m.mu.Unlock()
		m.applyOnce()
		return err
	}
	if m.lastErr != nil {
		m.opts.Logger.Info("runtime overrides can be read again", "version", st.Version)
	}
	m.lastErr, m.synced, m.skew = nil, local, now.Sub(local)
	known := m.stored
	m.mu.Unlock()
	if st.Version == 0 && known.Version > 0 && m.opts.Backend.Shared() {
		err := m.restore(ctx, known, now)
		if err != nil { // still stale: the store does not hold what this instance applies
			m.mu.Lock()
			m.lastErr, m.failedAt = err, local
			m.mu.Unlock()
		}
		return err
	}
	m.adopt(st, false)
	m.expire(ctx, st, now)
	return nil
}

// restore writes back known, the State this instance applies, to a
// backend that holds none: a Redis that lost its data. Another instance
// restoring first wins; the next Sync reads its State.
func (m *Manager) restore(ctx context.Context, known State, now time.Time) error {
	ok, err := m.opts.Backend.Commit(ctx, 0, known, []Record{restoreRecord(known, now)}, m.opts.AuditSize)
	if err != nil {
		err = fmt.Errorf("steering: write back the lost state: %w", err)
	}
	if err == nil && ok {
		m.opts.Logger.Warn("the store had lost the runtime overrides; wrote back the ones this instance applies", "version", known.Version)
	}
	m.applyOnce()
	return err
}

// restoreRecord is the audit record of writing known back to a store
// that had lost it.
func restoreRecord(known State, now time.Time) Record {
	return Record{Time: now, Version: known.Version, Action: "restore", From: "nothing (the store had lost the runtime state)",
		To: fmt.Sprintf("version %d as this instance applied it", known.Version), Author: "sluice"}
}

// adopt makes st the stored State if it is another version than the one
// stored (with newer, only a later one: a State this instance committed,
// which a read meanwhile may have passed), and applies what is in force of
// it.
func (m *Manager) adopt(st State, newer bool) {
	m.mu.Lock()
	if newer && st.Version > m.stored.Version || !newer && (st.Version != m.stored.Version || !m.applied) {
		m.stored = st
	}
	m.mu.Unlock()
	m.applyOnce()
}

// applyOnce gives Apply the State in force now, if it differs from what
// Apply was last given.
func (m *Manager) applyOnce() {
	m.apply.Lock()
	defer m.apply.Unlock()
	m.mu.Lock()
	cur, _ := m.stored.Expired(m.storeNow())
	same := m.applied && cur.Version == m.inForce.Version && len(cur.Overrides) == len(m.inForce.Overrides) &&
		(cur.Degrade == nil) == (m.inForce.Degrade == nil)
	if !same {
		m.inForce, m.applied = cur, true
	}
	m.mu.Unlock()
	if !same && m.opts.Apply != nil {
		m.opts.Apply(cur)
	}
}

// Now is the backend's clock now, as last measured: what expiries are
// measured against.
func (m *Manager) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.storeNow()
}

// MaxEntries bounds the overrides and blocks in force at once: the State
// is read whole by every instance every Resync.
const MaxEntries = 10_000

// storeNow is the backend's clock now, as last measured; m.mu held.
func (m *Manager) storeNow() time.Time { return m.opts.Clock.Now().Add(m.skew) }

// expire removes from the backend what has expired in st at now, with an
// audit record each. Of several instances doing so at once one succeeds;
// the others find another version and read it.
func (m *Manager) expire(ctx context.Context, st State, now time.Time) {
	next, recs := st.Expired(now)
	if len(recs) == 0 {
		return
	}
	next.Version = st.Version + 1
	for i := range recs {
		recs[i].Version = next.Version
	}
	ok, err := m.opts.Backend.Commit(ctx, st.Version, next, recs, m.opts.AuditSize)
	if err != nil || !ok {
		return // applied locally already; the next Sync tries again
	}
	for _, r := range recs {
		m.logRecord(r)
	}
	m.adopt(next, true)
}

// State returns the State in force and how it is kept.
func (m *Manager) State() (State, Status) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := Status{Version: m.inForce.Version, Backend: "file", Synced: m.synced}
	if m.opts.Backend.Shared() {
		st.Backend = "redis"
	}
	if m.lastErr != nil {
		st.Stale, st.StaleSince, st.Error = true, m.failedAt, m.lastErr.Error()
	}
	return m.inForce.clone(), st
}

// Audit returns the newest n audit records (at most AuditSize), newest
// first.
func (m *Manager) Audit(ctx context.Context, n int) ([]Record, error) {
	if n <= 0 || n > m.opts.AuditSize {
		n = m.opts.AuditSize
	}
	recs, err := m.opts.Backend.Audit(ctx, n)
	if err != nil {
		return nil, &UnavailableError{Err: err}
	}
	return recs, nil
}

// Change is one override or block to set.
type Change struct {
	Target string
	Rule   string // "" with Block
	Rate   string
	Burst  int64
	Block  bool
	TTL    time.Duration // 0: until removed
	Reason string
	Author string
}

// Put sets ch, replacing what its target had on its rule (or its block),
// for every instance. It returns the entry in force.
func (m *Manager) Put(ctx context.Context, ch Change) (Entry, error) {
	if err := m.checkTTL(ch.TTL, ch.Reason); err != nil {
		return Entry{}, err
	}
	var entry Entry
	err := m.commit(ctx, func(cur *State, now time.Time, _ bool) ([]Record, error) {
		entry = Entry{Target: ch.Target, Rule: ch.Rule, Rate: ch.Rate, Burst: ch.Burst, Block: ch.Block,
			Reason: ch.Reason, Author: ch.Author, Since: now}
		if ch.TTL > 0 {
			entry.Expires = now.Add(ch.TTL)
		}
		rec := Record{Time: now, Action: "set", Target: ch.Target, Rule: ch.Rule, From: (*Entry)(nil).Describe(),
			To: entry.Describe(), Author: ch.Author, Reason: ch.Reason}
		if i := cur.find(ch.Target, ch.Rule); i >= 0 {
			rec.From = cur.Overrides[i].Describe()
			cur.Overrides[i] = entry
		} else {
			if len(cur.Overrides) >= MaxEntries {
				return nil, &FieldError{Field: "target", Msg: fmt.Sprintf("%d overrides and blocks are in force, the most there may be (remove some first)", MaxEntries)}
			}
			cur.Overrides = append(cur.Overrides, entry)
			cur.sortEntries()
		}
		if m.opts.Check != nil {
			if err := m.opts.Check(*cur, entry); err != nil {
				return nil, err
			}
		}
		return []Record{rec}, nil
	})
	return entry, err
}

// Remove removes target's override on rule, or everything of target's
// (its overrides and its block) when rule is "". ErrNotFound when there
// is nothing to remove.
func (m *Manager) Remove(ctx context.Context, target, rule, author, reason string) ([]Entry, error) {
	var gone, before []Entry
	err := m.commit(ctx, func(cur *State, now time.Time, uncertain bool) ([]Record, error) {
		before, gone = gone, nil
		var recs []Record
		kept := cur.Overrides[:0]
		for _, e := range cur.Overrides {
			if e.Target == target && (rule == "" || e.Rule == rule) {
				gone = append(gone, e)
				recs = append(recs, Record{Time: now, Action: "remove", Target: e.Target, Rule: e.Rule, From: e.Describe(),
					To: (*Entry)(nil).Describe(), Author: author, Reason: reason})
				continue
			}
			kept = append(kept, e)
		}
		if len(gone) == 0 && len(before) > 0 && uncertain {
			gone = before // an earlier try's commit took, though its answer was lost
			return nil, errUnchanged
		}
		if len(gone) == 0 {
			return nil, ErrNotFound
		}
		cur.Overrides = kept
		return recs, nil
	})
	if errors.Is(err, errUnchanged) {
		return gone, nil
	}
	return gone, err
}

// SetDegrade turns the degrade switch on (for ttl, 0: until turned off)
// or off, for every instance. It returns the switch as it is now (nil:
// off).
func (m *Manager) SetDegrade(ctx context.Context, on bool, ttl time.Duration, reason, author string) (*Degrade, error) {
	if on {
		if err := m.checkTTL(ttl, reason); err != nil {
			return nil, err
		}
	}
	var out *Degrade
	err := m.commit(ctx, func(cur *State, now time.Time, _ bool) ([]Record, error) {
		from := describeDegrade(cur.Degrade)
		action := "degrade_off"
		if on {
			d := &Degrade{Reason: reason, Author: author, Since: now}
			if ttl > 0 {
				d.Expires = now.Add(ttl)
			}
			cur.Degrade, action = d, "degrade_on"
		} else if cur.Degrade == nil {
			return nil, errUnchanged
		} else {
			cur.Degrade = nil
		}
		out = cur.Degrade
		return []Record{{Time: now, Action: action, From: from, To: describeDegrade(cur.Degrade), Author: author, Reason: reason}}, nil
	})
	if errors.Is(err, errUnchanged) {
		return nil, nil
	}
	return out, err
}

// errUnchanged ends a commit that has nothing to change.
var errUnchanged = errors.New("steering: unchanged")

// checkTTL refuses a ttl below 0 or beyond MaxTTL (or none with a
// MaxTTL), and a change without a reason.
func (m *Manager) checkTTL(ttl time.Duration, reason string) error {
	switch {
	case reason == "":
		return &FieldError{Field: "reason", Msg: "missing: say why (it goes into the audit trail), such as \"partner-a floods /claims, incident 4711\""}
	case ttl < 0:
		return &FieldError{Field: "ttl", Msg: fmt.Sprintf("%s is not more than 0 (a duration such as 30m or 2h, or none: until removed)", ttl)}
	case m.opts.MaxTTL > 0 && ttl == 0:
		return &FieldError{Field: "ttl", Msg: fmt.Sprintf("missing: runtime.max_ttl is %s, so every change needs a ttl of at most that", m.opts.MaxTTL)}
	case m.opts.MaxTTL > 0 && ttl > m.opts.MaxTTL:
		return &FieldError{Field: "ttl", Msg: fmt.Sprintf("%s is beyond runtime.max_ttl %s (at most %s)", ttl, m.opts.MaxTTL, m.opts.MaxTTL)}
	}
	return nil
}

// commit applies change to the stored State (what has expired removed
// first) and commits it as the next version, again on a fresh read when
// another change came first. A shared store that lost its State (version
// 0 while this instance applies a later one) has the change made to the
// State in force here, written back with it and a restore record, so
// that a change after a Redis restart lifts no other override. A change that errs commits nothing. change
// learns whether an earlier try's commit failed (uncertain): it may have
// taken all the same, its answer lost.
func (m *Manager) commit(ctx context.Context, change func(cur *State, now time.Time, uncertain bool) ([]Record, error)) error {
	uncertain := false // an earlier try's commit failed: it may have taken all the same
	for try := range commitTries {
		if try > 0 { // another change came first: let it finish
			time.Sleep(time.Duration(rand.Int64N(int64(try)*int64(time.Millisecond) + 1)))
		}
		st, now, err := m.opts.Backend.Load(ctx)
		if err != nil {
			if try < transientTries && ctx.Err() == nil {
				continue // a connection the store's restart broke is made again
			}
			return &UnavailableError{Err: err}
		}
		base, restored := st, []Record(nil)
		if st.Version == 0 && m.opts.Backend.Shared() {
			m.mu.Lock()
			known := m.stored
			m.mu.Unlock()
			if known.Version > 0 { // the store lost its State (a Redis restarted without its data): change the one in force, written back with it
				base, restored = known, []Record{restoreRecord(known, now)}
			}
		}
		cur, recs := base.Expired(now)
		recs = append(restored, recs...)
		more, err := change(&cur, now, uncertain)
		if err != nil {
			return err
		}
		m.mu.Lock()
		cur.Version = max(st.Version, m.stored.Version) + 1 // never back, even on a store that lost its state
		m.mu.Unlock()
		recs = append(recs, more...)
		for i := range recs {
			recs[i].Version = cur.Version
		}
		ok, err := m.opts.Backend.Commit(ctx, st.Version, cur, recs, m.opts.AuditSize)
		if err != nil {
			if try < transientTries && ctx.Err() == nil {
				uncertain = true
				continue // committed or not, the next try reads which
			}
			return &UnavailableError{Err: err}
		}
		if ok {
			for _, r := range recs {
				m.logRecord(r)
			}
			m.mu.Lock()
			m.skew = now.Sub(m.opts.Clock.Now())
			m.mu.Unlock()
			m.adopt(cur, true)
			return nil
		}
	}
	return &UnavailableError{Err: errors.New("other changes kept coming first; try again")}
}

// logRecord logs one change.
func (m *Manager) logRecord(r Record) {
	m.opts.Logger.Info("runtime change", "action", r.Action, "target", r.Target, "rule", r.Rule, "from", r.From, "to", r.To,
		"author", r.Author, "reason", r.Reason, "version", r.Version)
}
