package redis

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// call is one script call of a batch: which request, which script, its key
// and arguments.
type call struct {
	req  int
	sc   *script
	key  string
	args []string
}

// DecideBatch decides several requests, each on its own key, in one round
// trip: the scripts are pipelined with EVALSHA, and in a cluster the
// requests for different nodes go out in parallel. Each request is decided
// on its own, as with Decide; a request that fails has its error in its
// Result. The returned error is store.ErrClosed after Close, else nil.
func (s *Store) DecideBatch(ctx context.Context, reqs []store.Request, now time.Time) ([]store.Result, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	results := make([]store.Result, len(reqs))
	calls := make([]call, 0, len(reqs))
	for i, r := range reqs {
		if r.Limit.IsZero() || r.Cost < 0 {
			results[i].Decision = limiter.Decision{Limit: r.Limit.Burst(), RetryAfter: limiter.Never}
			continue
		}
		sc := scripts[r.Limit.Algorithm()]
		calls = append(calls, call{req: i, sc: sc, key: redisKey(s.prefix, r.Key), args: s.args(r.Limit, r.Cost, now)})
	}
	retry := s.run(ctx, calls, results, true)
	if len(retry) > 0 { // NOSCRIPT: the node lost the scripts; send them whole
		s.run(ctx, retry, results, false)
	}
	return results, nil
}

// run sends calls in one pipeline, with EVALSHA if bySHA, else EVAL, and
// puts each answer in results. With bySHA it returns the calls the server
// answered with NOSCRIPT, which did not run, instead of failing them.
func (s *Store) run(ctx context.Context, calls []call, results []store.Result, bySHA bool) []call {
	if len(calls) == 0 {
		return nil
	}
	cmds := make(rueidis.Commands, len(calls))
	for i, c := range calls {
		if bySHA {
			cmds[i] = s.client.B().Evalsha().Sha1(c.sc.sha).Numkeys(1).Key(c.key).Arg(c.args...).Build()
		} else {
			cmds[i] = s.client.B().Eval().Script(c.sc.src).Numkeys(1).Key(c.key).Arg(c.args...).Build()
		}
	}
	var noScript []call
	for i, res := range s.client.DoMulti(ctx, cmds...) {
		c := calls[i]
		if bySHA && isNoScript(res.Error()) {
			noScript = append(noScript, c)
			continue
		}
		d, err := parseReply(res)
		if err != nil {
			results[c.req] = store.Result{Err: s.failed(c.sc, err)}
			continue
		}
		results[c.req] = store.Result{Decision: d}
	}
	return noScript
}
