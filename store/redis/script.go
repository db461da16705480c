package redis

import (
	"crypto/sha1"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/sluice-rl/sluice/limiter"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// script is a Lua script: one algorithm's (lua/lib.lua, lua/common.lua,
// but for sliding_log lua/state.lua, the algorithm's own file, for
// sliding_log lua/sliding_log_write.lua, and lua/save.lua), its batch form,
// or the multi-rule script.
type script struct {
	name string // the algorithm's name, for errors
	src  string // the whole script, for EVAL
	sha  string // its SHA-1, for EVALSHA
	// batch decides several requests on one key in one call (see
	// lua/batch_begin.lua); nil for the batch and multi-rule scripts.
	batch *script
}

// scripts holds the scripts, indexed by algorithm; index 0 is unused.
// multiScript decides the rules of one HTTP request all or nothing (see
// lua/multi.lua).
var scripts, multiScript = loadScripts()

// loadScripts builds each algorithm's script, and its batch script, and
// the multi-rule script, from the embedded files.
func loadScripts() ([limiter.LeakyBucket + 1]*script, *script) {
	lib, common, save := mustRead("lua/lib.lua"), mustRead("lua/common.lua"), mustRead("lua/save.lua")
	begin, end := mustRead("lua/batch_begin.lua"), mustRead("lua/batch_end.lua")
	var out [limiter.LeakyBucket + 1]*script
	multi := lib + "local decide = {}\n"
	for _, alg := range limiter.Algorithms {
		body := mustRead("lua/" + alg.String() + ".lua")
		// sliding_log reads and writes its list itself; the others read a
		// string (state.lua), and a batch carries their state from one
		// request to the next (batch_state.lua).
		state, write, carry := mustRead("lua/state.lua"), "", mustRead("lua/batch_state.lua")
		// How the multi-rule script's decide[alg] hands back its write:
		// the state followed by its limit, as save.lua writes it.
		commit := "if value then\nvalue = value .. tag\nend\n"
		rebased := "rebase"
		if alg == limiter.SlidingLog {
			// Its list records no limit (save.lua's tag is unused).
			state, write, carry = "local tag\n", mustRead("lua/sliding_log_write.lua"), ""
			commit = "value = function(expire)\n" + write + "end\n"
			rebased = "false" // a list is kept as it is under any limit
		}
		// The state records its algorithm (state.lua).
		named := fmt.Sprintf("local alg = %d -- %s\n", alg, alg)
		out[alg] = newScript(alg.String(), lib+named+common+state+body+write+save)
		out[alg].batch = newScript(alg.String()+" batch", lib+named+common+state+begin+body+write+carry+end+save)
		multi += fmt.Sprintf("\n-- %s\ndecide[%d] = function(key, cost, t, l1, l2, l3, queue)\n", alg, alg) + named +
			"local allowed, remaining, retry, reset, refill, value = 0, 0, 0, 0, 0, nil\n" +
			"local held_at, held_level = 0, 0\n" +
			state + body + commit + "return allowed, remaining, retry, reset, refill, value, " + rebased +
			", held_at, held_level\nend\n"
	}
	return out, newScript("multi-rule", multi+mustRead("lua/multi.lua"))
}

// newScript returns the script of src.
func newScript(name, src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{name: name, src: src, sha: hex.EncodeToString(sum[:])}
}

// mustRead reads an embedded script. A line "-- splice: f.lua" in it
// (indented or not) stands for lua/f.lua, read the same way: the buckets'
// admission (lua/bucket_admit.lua) and refund (lua/bucket_refund.lua) are
// written once so. The files are compiled into the binary, so a failure
// is a build mistake, found by every test.
func mustRead(name string) string {
	b, err := luaFiles.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("redis store: embedded script %s: %v", name, err))
	}
	var src strings.Builder
	for line := range strings.Lines(string(b)) {
		if f, ok := strings.CutPrefix(strings.TrimLeft(line, " "), "-- splice: "); ok {
			line = mustRead("lua/" + strings.TrimSpace(f))
		}
		src.WriteString(line)
	}
	return src.String()
}

// useRedisTime is the request's "now" that makes a script read Redis TIME
// (and give the key a TTL).
const useRedisTime = -1

// call is one script call: the script, the Redis key and the request (see
// lua/common.lua), and the request's cost as sent and the limit's Burst,
// which the reply leaves out.
type call struct {
	sc    *script
	key   string
	req   string // ARGV[1]
	cost  int64  // as in req: capped at burst+1
	burst int64
}

// requestLen is the length of a script's ARGV[1]: six doubles.
const requestLen = 6 * 8

// newCall returns the call deciding a request of cost on key (a Redis key)
// under l. now is the caller's time in µs, clamped as limiter clamps it
// (limiter.UnixMicro), or useRedisTime. A cost above the burst is sent as
// burst+1: every such cost is denied alike, and the scripts' numbers stay
// exact.
func newCall(l limiter.Limit, key string, cost, now int64) call {
	var b [requestLen]byte
	cost = min(cost, l.Burst()+1)
	putDouble(b[0:], cost)
	putDouble(b[8:], now)
	if l.Algorithm().HasBurst() {
		p, n := l.Interval()
		putDouble(b[16:], l.Burst())
		putDouble(b[24:], p)
		putDouble(b[32:], n)
		putDouble(b[40:], int64(l.Delay()/time.Microsecond)*n) // the queue
	} else {
		putDouble(b[16:], l.Rate())
		putDouble(b[24:], int64(l.Period()/time.Microsecond))
	}
	return call{sc: scripts[l.Algorithm()], key: key, req: string(b[:]), cost: cost, burst: l.Burst()}
}

// command builds a call of sc on keys with args: by its SHA-1 (EVALSHA) if
// bySHA, else with the script itself (EVAL, for a server that does not
// know it).
func (sc *script) command(b rueidis.Builder, bySHA bool, keys []string, args ...string) rueidis.Completed {
	if bySHA {
		return b.Evalsha().Sha1(sc.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return b.Eval().Script(sc.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// command builds the call's command (see script.command).
func (c *call) command(b rueidis.Builder, bySHA bool) rueidis.Completed {
	return c.sc.command(b, bySHA, []string{c.key}, c.req)
}

// putDouble writes v, an integer of at most 2^53 in magnitude, as the
// scripts read a number: a big-endian IEEE-754 double, which holds it
// exactly.
func putDouble(b []byte, v int64) {
	binary.BigEndian.PutUint64(b, math.Float64bits(float64(v)))
}

// getDouble reads a number as the scripts write it, a big-endian IEEE-754
// double, from the start of s (8 bytes at least).
func getDouble(s string) float64 {
	_ = s[7]
	return math.Float64frombits(uint64(s[0])<<56 | uint64(s[1])<<48 | uint64(s[2])<<40 | uint64(s[3])<<32 |
		uint64(s[4])<<24 | uint64(s[5])<<16 | uint64(s[6])<<8 | uint64(s[7]))
}

// replyLen is the length of a script's reply: seven doubles.
const replyLen = 7 * 8

// maxExact is 2^53: integers up to it in magnitude are exact as doubles.
const maxExact = 1 << 53

// parseReply turns a script's reply, the doubles allowed, remaining,
// retry µs (denied: retry_after, -1 for never; allowed: the delay), reset
// µs, refill µs and an allowed spending request's reservation (time µs,
// level units or a window's count), into a Decision under a limit
// of the given burst (its Limit). It checks the reply's shape rather than
// trusting it.
func parseReply(res rueidis.RedisResult, burst int64) (limiter.Decision, error) {
	s, err := res.ToString()
	if err != nil {
		return limiter.Decision{}, err
	}
	if len(s) != replyLen {
		return limiter.Decision{}, fmt.Errorf("reply has %d bytes, want %d", len(s), replyLen)
	}
	return parseDecision(s, burst)
}

// parseBatchReply is parseReply for a batch script's reply: n decisions
// one after another.
func parseBatchReply(res rueidis.RedisResult, burst int64, n int) ([]limiter.Decision, error) {
	s, err := res.ToString()
	if err != nil {
		return nil, err
	}
	if len(s) != n*replyLen {
		return nil, fmt.Errorf("batch reply has %d bytes, want %d for %d decisions", len(s), n*replyLen, n)
	}
	ds := make([]limiter.Decision, n)
	for i := range ds {
		if ds[i], err = parseDecision(s[i*replyLen:(i+1)*replyLen], burst); err != nil {
			return nil, fmt.Errorf("decision %d of %d: %w", i+1, n, err)
		}
	}
	return ds, nil
}

// parseDecision reads one decision, replyLen bytes.
func parseDecision(s string, burst int64) (limiter.Decision, error) {
	var v [replyLen / 8]int64
	for i := range v {
		f := getDouble(s[8*i:])
		if f != math.Trunc(f) || math.Abs(f) > maxExact { // also NaN and infinities
			return limiter.Decision{}, fmt.Errorf("reply element %d is %v, not an integer", i, f)
		}
		v[i] = int64(f)
	}
	allowed, remaining, retry, reset, refill, at, level := v[0], v[1], v[2], v[3], v[4], v[5], v[6]
	if allowed != 0 && allowed != 1 || retry < -1 || allowed == 1 && retry < 0 || reset < 0 || refill < 0 ||
		allowed == 0 && at != 0 || allowed == 1 && retry > 0 && at == 0 || at < 0 || level < 0 || (at == 0) != (level == 0) {
		return limiter.Decision{}, fmt.Errorf("reply %v out of range", v)
	}
	d := limiter.Decision{
		Allowed:    allowed == 1,
		Limit:      burst,
		Remaining:  remaining,
		RetryAfter: time.Duration(retry) * time.Microsecond,
		Reset:      time.Duration(reset) * time.Microsecond,
		Refill:     time.Duration(refill) * time.Microsecond,
	}
	switch {
	case retry == -1:
		d.RetryAfter = limiter.Never
	case allowed == 1: // held for its turn, or 0; a reservation if it spent
		d.RetryAfter, d.Delay = 0, d.RetryAfter
		d.Reservation = limiter.Reservation{At: at, Level: level}
	}
	return d, nil
}

// isNoScript reports whether err is Redis's NOSCRIPT: the server does not
// know the script's SHA-1 (it restarted, or SCRIPT FLUSH ran).
func isNoScript(err error) bool {
	rerr, ok := rueidis.IsRedisErr(err)
	return ok && rerr.IsNoScript()
}

// cancelScript gives back a held request's reservation (lua/cancel.lua).
var cancelScript = newScript("cancel", mustRead("lua/lib.lua")+mustRead("lua/cancel.lua")+
	mustRead("lua/state.lua")+mustRead("lua/cancel_end.lua"))
