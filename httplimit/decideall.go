package httplimit

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
func (l *Limiter) decideAll(ctx context.Context, s *scratch, now time.Time) (res []store.Result, spent bool, err error) {
	if enforcing(s.reqs) < 2 {
		res, err = l.opts.Store.DecideBatch(ctx, s.reqs, now)
		return res, true, err
	}
	if all, ok := l.opts.Store.(store.AllOrNothing); ok {
		res, err := all.DecideAll(ctx, s.reqs, now)
		if !errors.Is(err, store.ErrNotAtomic) {
			return res, err != nil || !enforcedDenial(s.reqs, res), err
		}
	}
	s.again = append(s.again[:0], s.reqs...)
	for k := range s.again {
		s.again[k].Cost = 0
	}
	looks, err := l.opts.Store.DecideBatch(ctx, s.again, now)
	if err != nil || len(looks) != len(s.reqs) {
		return looks, false, err
	}
	s.again, s.denied, s.held = s.again[:0], s.denied[:0], s.held[:0]
	blocked := false
	for k, res := range looks {
		switch {
		case res.Err != nil || res.Decision.Remaining >= s.reqs[k].Cost:
		case s.reqs[k].Limit.Delay() > 0: // held or denied: only its cost tells (spendHeld)
			s.held = append(s.held, k)
		default:
			s.again, s.denied = append(s.again, s.reqs[k]), append(s.denied, k)
			blocked = blocked || !s.reqs[k].Shadow
		}
	}
	if !blocked && len(s.held) > 0 {
		return l.spendHeld(ctx, s, looks, now)
	}
	if !blocked { // a shadow rule without room stops nothing: spend, and it reports its denial
		res, err = l.opts.Store.DecideBatch(ctx, s.reqs, now)
		return res, true, err
	}
	again, err := l.opts.Store.DecideBatch(ctx, s.again, now)
	if err != nil || len(again) != len(s.again) {
		return again, false, err
	}
	for j, k := range s.denied {
		looks[k] = again[j]
	}
	return looks, false, nil
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
