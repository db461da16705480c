package decision

import (
	"context"
	"net/netip"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// Explanation is what Engine.Explain found for a described request: how
// it is identified and counted, and what it would get now.
type Explanation struct {
	// Client names the caller as the Report does: its client id,
	// "anonymous", "unknown" (refused for its key) or "-" (the policy
	// identifies nobody by key).
	Client string
	// Plan is the caller's plan, "" for none.
	Plan string
	// Method, Path and Host are the request's as the rules match them
	// (Host "" when no rule matches on it); Addr the address it is
	// counted by (the zero Addr for none).
	Method, Path, Host string
	Addr               netip.Addr
	// Rules has one result per matching rule, in the policy's order.
	Rules []LookResult
	// Status is what the request would get now: 0 (passed on), 400 or
	// 401 (it cannot be counted, Detail says why), 403 (its client or
	// address is blocked: Detail as the 403's, Rules empty), 429 (a rule
	// has no room, RetryAfter the longest wait), or 503 (the store cannot
	// be read and the failure policy refuses).
	Status     int
	Detail     string
	RetryAfter time.Duration
}

// Explain describes what Decide would do with req under set now, without
// spending anything or telling Options.OnDecision: it identifies the
// caller, cleans and matches the path, builds each matching rule's store
// key as Decide does, and reads each counter (Look). The throttle
// (protect) is not asked. It is for operators, not the data path: it
// allocates, and asks the store once per rule.
func (e *Engine) Explain(ctx context.Context, set Settings, req Request) Explanation {
	pol := set.Policy
	v := new(Verdict) // not the pool's: it is never finished
	v.start(e, ctxOr(ctx), req)
	var ex Explanation
	key := pol.KeyName()
	v.scrub(pol)
	caller, err := identify(pol, v, key)
	switch {
	case caller == nil && err != nil:
		return Explanation{Client: UnknownClient, Status: statusBadRequest, Detail: err.Error()}
	case caller == nil:
		return Explanation{Client: UnknownClient, Status: statusUnauthorized, Detail: unauthorizedDetail(v) + pol.KeyHeader()}
	}
	ex.Client, ex.Plan = clientName(pol, caller), caller.Plan
	if ex.Client == "" {
		ex.Client = "-"
	}
	now := e.opts.Clock.Now()
	blocked := v.clientBlocked(caller, now) // before the path, as Decide: a blocked client's bad path is no 400
	if err := v.clean(pol); err != nil && !blocked {
		ex.Status, ex.Detail = statusBadRequest, pathDetail(err)
		return ex
	}
	ex.Method, ex.Path, ex.Host = v.Method, v.Path, v.Host
	addr := clientAddr(pol, v)
	v.Addr, ex.Addr = addr, addr
	if blocked || v.addrBlocked(pol, addr, now) {
		ex.Status, ex.Detail = statusForbidden, string(v.detail)
		return ex
	}
	v.matchRules(pol)
	v.requests(pol, caller, addr)
	if detail, refused := v.headerRefused(pol); refused {
		ex.Status, ex.Detail = statusBadRequest, detail
		return ex
	}
	e.explainRules(&ex, v, pol, caller, addr, now)
	return ex
}

// explainRules reads each matching rule's counter into ex and says what
// the request would get.
func (e *Engine) explainRules(ex *Explanation, v *Verdict, pol *policy.Compiled, caller *policy.Caller, addr netip.Addr, now time.Time) {
	keys := map[int]store.Key{}
	for k, i := range v.index {
		keys[i] = v.reqs[k].Key
	}
	for k, i := range v.leaseIndex {
		keys[i] = v.leaseKeys[k]
	}
	for _, i := range v.match {
		res := e.lookRule(v.ctx, pol, caller, i, keys[i], addr, now)
		res.Counted = counted(pol, caller, i, addr, v)
		if rule := pol.Rule(i); !res.Classifies && !res.Exempt && keys[i] == (store.Key{}) { // a shadow rule without its header
			res.Counted, res.Retry = "requests without header "+rule.Key.Header+" (refused, were the rule enforced)", limiter.Never
		}
		ex.Rules = append(ex.Rules, res)
		switch {
		case res.Err != nil && (ex.Status == 0 || ex.Status == statusTooManyRequests) && e.refusesOnError(res.Err):
			ex.Status, ex.Detail = statusUnavailable, "the rate limiter cannot read rule "+res.Rule+"'s counter: "+res.Err.Error()
		case res.Err != nil && ex.Status == 0:
			ex.Detail = "the rate limiter cannot read rule " + res.Rule + "'s counter (" + res.Err.Error() + "); on_failure: open lets it pass"
		case res.Refuses() && ex.Status != statusUnavailable:
			if ex.Status == 0 || res.Retry > ex.RetryAfter {
				ex.Detail = "rule " + res.Rule + " has no room for " + res.Counted
				ex.RetryAfter = res.Retry
			}
			ex.Status = statusTooManyRequests
		}
	}
}

// refusesOnError reports whether a request whose look at a rule's counter
// failed with err is refused, as storeFailed answers it.
func (e *Engine) refusesOnError(err error) bool {
	refused, _ := e.opts.OnFailure.Refused(err)
	return refused
}
