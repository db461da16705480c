package redis

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/sluice-rl/sluice/limiter"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// script is one algorithm's Lua script: the shared prelude (lua/common.lua)
// followed by the algorithm's own file.
type script struct {
	name string       // the algorithm's name, for errors
	src  string       // the whole script, for EVAL
	sha  string       // its SHA-1, for EVALSHA in pipelines
	lua  *rueidis.Lua // EVALSHA with a fallback to EVAL on NOSCRIPT
}

// scripts holds the scripts, indexed by algorithm; index 0 is unused.
var scripts = loadScripts()

// loadScripts builds each algorithm's script from the embedded files.
func loadScripts() [limiter.LeakyBucket + 1]*script {
	common := mustRead("lua/common.lua")
	var out [limiter.LeakyBucket + 1]*script
	for _, alg := range limiter.Algorithms {
		src := common + mustRead("lua/"+alg.String()+".lua")
		sum := sha1.Sum([]byte(src))
		out[alg] = &script{name: alg.String(), src: src, sha: hex.EncodeToString(sum[:]), lua: rueidis.NewLuaScript(src)}
	}
	return out
}

// mustRead reads an embedded script. The files are compiled into the
// binary, so a failure is a build mistake, found by every test.
func mustRead(name string) string {
	b, err := luaFiles.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("redis store: embedded script %s: %v", name, err))
	}
	return string(b)
}

// useRedisTime is the ARGV "now" that makes a script read Redis TIME.
const useRedisTime = "-1"

// scriptArgs returns a script's ARGV for a request of cost under l (see
// lua/common.lua). now is the caller's time in µs, clamped as limiter
// clamps it, or useRedisTime. A cost above the burst is sent as burst+1:
// every such cost is denied alike, and the scripts' numbers stay exact.
func scriptArgs(l limiter.Limit, cost int64, now string, expire bool) []string {
	p, n := l.Interval()
	cost = min(cost, l.Burst()+1)
	exp := "0"
	if expire {
		exp = "1"
	}
	return []string{
		strconv.FormatInt(l.Rate(), 10),
		strconv.FormatInt(l.Burst(), 10),
		strconv.FormatInt(int64(l.Period()/time.Microsecond), 10),
		strconv.FormatInt(p, 10),
		strconv.FormatInt(n, 10),
		strconv.FormatInt(cost, 10),
		now,
		exp,
	}
}

// callerTime formats t for a script as limiter.Decide takes it: whole
// microseconds since the epoch, clamped to [1, 2^52].
func callerTime(t time.Time) string {
	return strconv.FormatInt(limiter.UnixMicro(t), 10)
}

// replyLen is the number of integers in a script's reply.
const replyLen = 5

// parseReply turns a script's reply, {allowed, limit, remaining,
// retry_after µs (-1: never), reset µs}, into a Decision. It checks the
// reply's shape rather than trusting it.
func parseReply(res rueidis.RedisResult) (limiter.Decision, error) {
	msgs, err := res.ToArray()
	if err != nil {
		return limiter.Decision{}, err
	}
	if len(msgs) != replyLen {
		return limiter.Decision{}, fmt.Errorf("reply has %d elements, want %d", len(msgs), replyLen)
	}
	var v [replyLen]int64
	for i := range msgs {
		if v[i], err = msgs[i].ToInt64(); err != nil {
			return limiter.Decision{}, fmt.Errorf("reply element %d: %w", i, err)
		}
	}
	allowed, limit, remaining, retry, reset := v[0], v[1], v[2], v[3], v[4]
	if allowed != 0 && allowed != 1 || retry < -1 || reset < 0 {
		return limiter.Decision{}, fmt.Errorf("reply %v out of range", v)
	}
	d := limiter.Decision{
		Allowed:    allowed == 1,
		Limit:      limit,
		Remaining:  remaining,
		RetryAfter: time.Duration(retry) * time.Microsecond,
		Reset:      time.Duration(reset) * time.Microsecond,
	}
	if retry == -1 {
		d.RetryAfter = limiter.Never
	}
	return d, nil
}

// isNoScript reports whether err is Redis's NOSCRIPT: the server does not
// know the script's SHA-1 (it restarted, or SCRIPT FLUSH ran).
func isNoScript(err error) bool {
	rerr, ok := rueidis.IsRedisErr(err)
	return ok && rerr.IsNoScript()
}
