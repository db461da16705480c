package decision

import (
	"context"
	"errors"
	"time"

	"github.com/sluice-rl/sluice/store"
)

// decideAll asks the store for every rule's decision. With one enforcing
// rule that is one batch. With several, a request that one rule rejects
// must spend nothing of the others. A store that can decide them all or
// nothing (store.AllOrNothing: Redis) does so in one round trip. Otherwise
// the rules are first only looked at (cost 0): if every enforcing one has
// room, a second batch spends; otherwise the rules without room are asked
// with their cost (a denial spends nothing) for their Retry-After. Two
// concurrent requests may then both see room and one be rejected after
// spending some rules: the race is narrow, and it errs on the side of the
// service.
//
// spent reports whether the allowed results spent their cost: false when
// an enforcing rule's denial kept the others from spending (their results
// are then looks). A single batch spends whatever it allows.
func (e *Engine) decideAll(ctx context.Context, v *Verdict, now time.Time) (res []store.Result, spent bool, err error) {
	if enforcing(v.reqs) < 2 {
		res, err = e.batch(ctx, &v.resA, v.reqs, now)
		return res, true, err
	}
	if all, ok := e.opts.Store.(store.AllOrNothing); ok {
		res, err := all.DecideAll(ctx, v.reqs, now)
		if !errors.Is(err, store.ErrNotAtomic) {
			return res, err != nil || !enforcedDenial(v.reqs, res), err
		}
	}
	v.again = append(v.again[:0], v.reqs...)
	for k := range v.again {
		v.again[k].Cost = 0
	}
	looks, err := e.batch(ctx, &v.resA, v.again, now)
	if err != nil || len(looks) != len(v.reqs) {
		return looks, false, err
	}
	v.again, v.denied, v.held = v.again[:0], v.denied[:0], v.held[:0]
	blocked := false
	for k, res := range looks {
		switch {
		case res.Err != nil || res.Decision.Remaining >= v.reqs[k].Cost:
		case v.reqs[k].Limit.Delay() > 0: // held or denied: only its cost tells (spendHeld)
			v.held = append(v.held, k)
		default:
			v.again, v.denied = append(v.again, v.reqs[k]), append(v.denied, k)
			blocked = blocked || !v.reqs[k].Shadow
		}
	}
	if !blocked && len(v.held) > 0 {
		return e.spendHeld(ctx, v, looks, now)
	}
	if !blocked { // a shadow rule without room stops nothing: spend, and it reports its denial
		res, err = e.batch(ctx, &v.resB, v.reqs, now)
		return res, true, err
	}
	again, err := e.batch(ctx, &v.resB, v.again, now)
	if err != nil || len(again) != len(v.again) {
		return again, false, err
	}
	for j, k := range v.denied {
		looks[k] = again[j]
	}
	return looks, false, nil
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
