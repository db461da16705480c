package decision

import (
	"context"
	"time"

	"github.com/sluice-rl/sluice/store"
)

// decideAll asks the store for every rule's decision. With one enforcing
// rule that is one batch. With several, a request that one rule rejects
// must spend nothing of the others: the store decides them all or nothing,
// as one step of its own (store.AllOrNothing: the memory, Redis and
// gossip stores), or else store.LookThenSpend does, in two or three
// batches.
//
// spent reports whether the allowed results spent their cost: false when
// an enforcing rule's denial kept the others from spending (their results
// are then looks). A single batch spends whatever it allows.
func (e *Engine) decideAll(ctx context.Context, v *Verdict, now time.Time) (res []store.Result, spent bool, err error) {
	if enforcing(v.reqs) < 2 {
		res, err = e.batch(ctx, &v.resA, v.reqs, now)
		return res, true, err
	}
	if e.all != nil {
		res, err = e.all.DecideAll(ctx, v.resA[:0], v.reqs, now)
	} else {
		res, err = store.LookThenSpend(ctx, e.opts.Store, v.resA[:0], v.reqs, now)
	}
	v.resA = res
	return res, err != nil || !enforcedDenial(v.reqs, res), err
}

// batch is the store's DecideBatch, into *buf when the store can append
// (store.BatchAppender): a Verdict's pooled memory.
func (e *Engine) batch(ctx context.Context, buf *[]store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	if e.appender == nil {
		return e.opts.Store.DecideBatch(ctx, reqs, now)
	}
	res, err := e.appender.AppendDecideBatch(ctx, (*buf)[:0], reqs, now)
	*buf = res
	return res, err
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
