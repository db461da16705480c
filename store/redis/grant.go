package redis

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// Quota grants (store.redis.lease in the configuration).
//
// A key hot on this instance (a second decision on it within
// GrantOptions.TTL of the one before) does not cost a script call per
// decision: one call of the grant script (lua/grant.lua) spends up to
// GrantOptions.Max units of the key in Redis at once, as one request of
// that cost would, at Redis TIME, and the instance admits requests from
// them without asking Redis until they run out or the grant ends. Units
// are spent in Redis before any of them is admitted, so the instances
// together never admit more than the limit. A grant ends after TTL, or at
// the end of the window its units were counted in (fixed_window and
// sliding_window: a unit of a window admitted in the next would be
// admitted twice); its unused units then go back (lua/grant_return.lua,
// limiter.Settle's refund) if their window is still open, or for a bucket
// if no other request spent on the key since. Units that cannot go back
// stay spent: the key admits less, never more. Concurrent requests on a
// hot key (grantfly.go): one grant call at a time is in flight on it, the
// units held serve meanwhile, and a request they cannot serve goes in the
// next call, which spends its cost with the next grant.
//
// These are not the concurrency leases of lease.go (slots of requests in
// flight): a grant is quota spent ahead of its requests.
//
// Not every limit is granted. sliding_log records the time of each
// request it admits; units spent at the grant's time but admitted later
// would leave the log before their requests' period had passed, and the
// log would then admit more than its rate in some period. A limit with a
// delay holds requests for their turn, which only a decision in Redis
// can give. Both are decided one call per decision, as without grants;
// so are looks (cost 0) and requests that cost more than Max.

// Defaults and bounds of GrantOptions.
const (
	// DefaultGrantTTL is GrantOptions.TTL's default.
	DefaultGrantTTL = time.Second
	// MinGrantTTL and MaxGrantTTL bound GrantOptions.TTL.
	MinGrantTTL = 10 * time.Millisecond
	MaxGrantTTL = time.Minute
	// DefaultGrantKeys is GrantOptions.MaxKeys's default.
	DefaultGrantKeys = 100_000
)

// GrantOptions configures quota grants (Options.Grant). The zero value
// grants nothing.
type GrantOptions struct {
	// Max is the most units one grant takes of a key, at most the key's
	// limit (its rate or burst; a smaller limit is granted at most its
	// own). 0: no grants.
	Max int64
	// TTL is the longest a grant lives: the longest its unused units sit
	// here, unusable by other instances, and the longest between two
	// decisions on a key for it to count as hot. MinGrantTTL to
	// MaxGrantTTL; default DefaultGrantTTL.
	TTL time.Duration
	// MaxKeys bounds the keys whose grants and hotness the store keeps;
	// a key beyond it is decided one call per decision. Default
	// DefaultGrantKeys.
	MaxKeys int
}

// GrantStats counts what quota grants did; read with Store.GrantStats.
type GrantStats struct {
	// Grants counts script calls that took a grant.
	Grants atomic.Int64
	// CallsSaved counts decisions answered without a script call of their
	// own: from a grant held here, or in the grant call of another request
	// on the key (grantfly.go).
	CallsSaved atomic.Int64
	// UnitsReturned counts unused units given back when their grant ended.
	UnitsReturned atomic.Int64
	// UnitsExpired counts unused units that could not go back when their
	// grant ended (their window had ended, another request had spent on
	// the bucket since, Redis did not answer): spent, never admitted.
	UnitsExpired atomic.Int64
}

// grantable reports whether requests under l are granted (see above).
func grantable(l limiter.Limit) bool {
	return !l.IsZero() && l.Algorithm() != limiter.SlidingLog && l.Delay() == 0
}

// grantScripts take a grant, returnScripts give its unused units back, one
// of each per algorithm but sliding_log, indexed by algorithm.
var grantScripts, returnScripts = loadGrantScripts()

func loadGrantScripts() (grant, back [limiter.LeakyBucket + 1]*script) {
	lib, state := mustRead("lua/lib.lua"), mustRead("lua/state.lua")
	for _, alg := range limiter.Algorithms {
		if alg == limiter.SlidingLog {
			continue
		}
		named := fmt.Sprintf("local alg = %d -- %s\n", alg, alg)
		decide := "local function decide(key, cost, t, l1, l2, l3, queue)\n" + named +
			"local allowed, remaining, retry, reset, refill, value = 0, 0, 0, 0, 0, nil\n" +
			"local held_at, held_level = 0, 0\n" + state + mustRead("lua/"+alg.String()+".lua") +
			"if value then\nvalue = value .. tag\nend\n" +
			"return allowed, remaining, retry, reset, refill, value, rebase, held_at, held_level\nend\n"
		grant[alg] = newScript(alg.String()+" grant", lib+decide+mustRead("lua/grant.lua"))
		back[alg] = newScript(alg.String()+" grant return", lib+named+mustRead("lua/settle_head.lua")+state+
			mustRead("lua/settle.lua")+mustRead("lua/grant_return.lua"))
	}
	return grant, back
}

// grantReplyLen is the length of the grant script's reply: eight doubles.
const grantReplyLen = replyLen + 8

// takeGrant asks Redis for a grant of up to want units of key under l, at
// least need (the asking request's cost), at now (with
// Options.CallerTime). It returns the decision of the request that spent
// the grant (a denial of need when none fits) and the units granted.
func (s *Store) takeGrant(ctx context.Context, key store.Key, l limiter.Limit, now time.Time, want, need int64) (limiter.Decision, int64, error) {
	sc := grantScripts[l.Algorithm()]
	c := s.newCall(key, l, 0, now)
	var b [7 * 8]byte
	putDouble(b[0:], want)
	putDouble(b[8:], need)
	copy(b[16:], c.req[8:48])
	tctx, cancel := s.withTimeout(ctx)
	defer cancel()
	reply, err := s.evalScript(tctx, sc, []string{c.key}, string(b[:])).ToString()
	if err == nil && len(reply) != grantReplyLen {
		err = fmt.Errorf("reply has %d bytes, want %d", len(reply), grantReplyLen)
	}
	if err != nil {
		return limiter.Decision{}, 0, s.failed(ctx, sc, err)
	}
	d, err := parseDecision(reply[:replyLen], l.Burst())
	granted := getDouble(reply[replyLen:])
	switch {
	case err != nil:
	case granted != math.Trunc(granted) || granted < 0 || granted > float64(want) ||
		(granted == 0) == d.Allowed || d.Allowed && granted < float64(need):
		err = fmt.Errorf("granted %v of %d (at least %d), allowed %v", granted, want, need, d.Allowed)
	}
	if err != nil {
		return limiter.Decision{}, 0, s.failed(ctx, sc, err)
	}
	return d, int64(granted), nil
}

// returnGrant gives back unused of the granted units of a grant on key
// under l whose reservation is r, and reports whether they went back.
func (s *Store) returnGrant(ctx context.Context, key store.Key, l limiter.Limit, now time.Time, r limiter.Reservation, granted, unused int64) (bool, error) {
	sc := returnScripts[l.Algorithm()]
	c := s.newCall(key, l, 0, now)
	var b [9 * 8]byte
	copy(b[:40], c.req[8:48])
	for i, v := range [...]int64{r.At, r.Level, granted, granted - unused} {
		putDouble(b[40+8*i:], v)
	}
	tctx, cancel := s.withTimeout(ctx)
	defer cancel()
	got, err := s.evalScript(tctx, sc, []string{c.key}, string(b[:])).AsInt64()
	if err != nil {
		return false, s.failed(ctx, sc, err)
	}
	return got == 1, nil
}

// GrantStats returns the counters of quota grants; all zero without them.
func (s *Store) GrantStats() *GrantStats {
	if s.grants == nil {
		return &GrantStats{}
	}
	return &s.grants.stats
}
