package decision

import (
	"context"
	"time"

	"github.com/sluice-rl/sluice/store"
)

// decideAll asks the store for every rule's decision, into the Verdict's
// pooled results. With one enforcing rule that is one DecideEach. With
// several, a request that one rule rejects must spend nothing of the
// others: the store's DecideAll decides them all or nothing, as one step
// of its own.
//
// spent reports whether the allowed results spent their cost: false when
// an enforcing rule's denial kept the others from spending (their results
// are then looks). DecideEach spends whatever it allows.
func (e *Engine) decideAll(ctx context.Context, v *Verdict, now time.Time) (res []store.Result, spent bool, err error) {
	if enforcing(v.reqs) < 2 {
		res, err = e.opts.Store.DecideEach(ctx, v.resA[:0], v.reqs, now)
		v.resA = res
		return res, true, err
	}
	res, err = e.opts.Store.DecideAll(ctx, v.resA[:0], v.reqs, now)
	v.resA = res
	return res, err != nil || !enforcedDenial(v.reqs, res), err
}

// enforcedDenial reports whether an enforcing request was denied.
func enforcedDenial(reqs []store.Request, res []store.Result) bool {
	for k, r := range res {
		if k < len(reqs) && !reqs[k].Shadow && r.Err == nil && !r.Decision.Allowed {
			return true
		}
	}
	return false
}

// enforcing counts the requests of enforcing rules.
func enforcing(reqs []store.Request) int {
	n := 0
	for _, r := range reqs {
		if !r.Shadow {
			n++
		}
	}
	return n
}
