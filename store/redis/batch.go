package redis

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// batchCall is one script call of a batch and the request it decides.
type batchCall struct {
	call
	req int
}

// DecideEach decides several requests, each on its own key, in one round
// trip: the scripts are pipelined with EVALSHA, and in a cluster the
// requests for different nodes go out in parallel. Each request is decided
// on its own, as with Decide; a request that fails has its error in its
// Result. The results are appended to dst. The returned error (dst then
// as given) is store.ErrClosed after Close, or a lazy
// store's failure to connect (ErrNotConnected), else nil.
func (s *Store) DecideEach(ctx context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	if s.closed.Load() {
		return dst, store.ErrClosed
	}
	var res []store.Result
	var err error
	if s.grants != nil {
		res, err = s.grantBatch(ctx, reqs, now)
	} else {
		res, err = s.batchDirect(ctx, reqs, now)
	}
	if err != nil {
		return dst, err
	}
	if dst == nil {
		return res, nil
	}
	return append(dst, res...), nil
}

// batchDirect is DecideEach without quota grants.
func (s *Store) batchDirect(ctx context.Context, reqs []store.Request, now time.Time) ([]store.Result, error) {
	results := make([]store.Result, len(reqs))
	if len(reqs) == 1 && !reqs[0].Limit.IsZero() && reqs[0].Cost >= 0 { // most calls: spare the calls slice
		if err := s.Connect(ctx); err != nil {
			return nil, err
		}
		r := reqs[0]
		results[0].Decision, results[0].Err = s.coalesce(ctx, s.newCall(r.Key, r.Limit, r.Cost, now))
		return results, nil
	}
	calls := make([]batchCall, 0, len(reqs))
	for i, r := range reqs {
		if r.Limit.IsZero() || r.Cost < 0 {
			results[i].Decision = limiter.Decision{Limit: r.Limit.Burst(), RetryAfter: limiter.Never}
			continue
		}
		calls = append(calls, batchCall{call: s.newCall(r.Key, r.Limit, r.Cost, now), req: i})
	}
	if len(calls) == 0 {
		return results, nil
	}
	if err := s.Connect(ctx); err != nil {
		return nil, err
	}
	if c := calls[0]; len(calls) == 1 { // one request: it may join its key's batch
		results[c.req].Decision, results[c.req].Err = s.coalesce(ctx, c.call)
		return results, nil
	}
	tctx, cancel := s.withTimeout(ctx)
	defer cancel()
	retry := s.run(ctx, tctx, calls, results, true)
	if len(retry) > 0 { // NOSCRIPT: the node lost the scripts; send them whole
		s.run(ctx, tctx, retry, results, false)
	}
	return results, nil
}

// run sends calls in one pipeline under tctx, with EVALSHA if bySHA, else
// EVAL, and puts each answer in results; ctx is the caller's. With bySHA
// it returns the calls the server answered with NOSCRIPT, which did not
// run, instead of failing them.
func (s *Store) run(ctx, tctx context.Context, calls []batchCall, results []store.Result, bySHA bool) []batchCall {
	cmds := make(rueidis.Commands, len(calls))
	for i := range calls {
		cmds[i] = calls[i].command(s.client.B(), bySHA)
	}
	var noScript []batchCall
	for i, res := range s.client.DoMulti(tctx, cmds...) {
		c := calls[i]
		if bySHA && isNoScript(res.Error()) {
			noScript = append(noScript, c)
			continue
		}
		d, err := parseReply(res, c.burst)
		if err != nil {
			results[c.req] = store.Result{Err: s.failed(ctx, c.sc, err)}
			continue
		}
		results[c.req] = store.Result{Decision: d}
	}
	return noScript
}

var _ store.Bounded = (*Store)(nil)

// DecideBound is how long a DecideEach may take at most, whatever its
// caller's deadline: Options.Timeout, and a lazy store's try to connect
// (500ms) before it. With quota grants the store claims no bound: a
// grant's decisions may take more than one call.
func (s *Store) DecideBound() (time.Duration, bool) {
	if s.grants != nil {
		return 0, false
	}
	if s.lazy != nil {
		return s.timeout + lazyDialTimeout, true
	}
	return s.timeout, true
}
