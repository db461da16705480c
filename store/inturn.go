package store

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// LookThenSpend decides reqs as Store.DecideAll says, appending
// the results to dst, for a store that cannot decide them in one step (a
// Redis Cluster whose keys live on different nodes): in two or three of
// s's.DecideEach calls. Every request is first looked at (cost 0). If
// every enforcing one has room, a second batch spends; otherwise the
// requests without room are asked with their cost (a denial spends
// nothing) for their Retry-After, and the others answer their look. A
// request with a delay (limiter.Limit.Delay) and no room now is decided
// first with its cost, as only that tells whether it holds the request or
// refuses it; if one that enforces refuses, the others spend nothing and
// the reservations already made are given back where s can (Canceler).
//
// A zero Limit and a negative cost have no room (limiter.Decide denies
// them whatever the state).
//
// It is not atomic: two concurrent calls may both see room and one be
// refused after spending some of its requests (the race is narrow, and
// errs on the side of the service), and a key asked twice is looked at
// once for both. A store that can decide all or nothing should.
func LookThenSpend(ctx context.Context, s Store, dst []Result, reqs []Request, now time.Time) ([]Result, error) {
	looks := make([]Request, len(reqs))
	for k, r := range reqs {
		looks[k], looks[k].Cost = r, 0
	}
	res, err := decideBatch(ctx, s, looks, now)
	if err != nil {
		return dst, err
	}
	var denied, held []int
	blocked := false
	for k, r := range res {
		switch q := &reqs[k]; {
		case r.Err != nil || r.Decision.Allowed && q.Cost >= 0 && r.Decision.Remaining >= q.Cost: // room

		case q.Limit.Delay() > 0: // held or refused: only its cost tells
			held = append(held, k)
		default:
			denied = append(denied, k)
			blocked = blocked || !q.Shadow
		}
	}
	switch {
	case !blocked && len(held) > 0:
		err = spendHeld(ctx, s, reqs, held, res, now)
	case !blocked: // a shadow request without room stops nothing: spend, and it reports its denial
		res, err = decideBatch(ctx, s, reqs, now)
	default:
		err = reask(ctx, s, reqs, denied, res, now)
	}
	if err != nil {
		return dst, err
	}
	return append(dst, res...), nil
}

// decideBatch is s's.DecideEach, which must answer every request.
func decideBatch(ctx context.Context, s Store, reqs []Request, now time.Time) ([]Result, error) {
	res, err := s.DecideEach(ctx, nil, reqs, now)
	if err == nil && len(res) != len(reqs) {
		err = fmt.Errorf("store: %d results for %d requests", len(res), len(reqs))
	}
	return res, err
}

// reask decides the requests of reqs that denied names with their cost
// (they had no room: a denial spends nothing), into looks.
func reask(ctx context.Context, s Store, reqs []Request, denied []int, looks []Result, now time.Time) error {
	again := make([]Request, len(denied))
	for j, k := range denied {
		again[j] = reqs[k]
	}
	res, err := decideBatch(ctx, s, again, now)
	if err != nil {
		return err
	}
	for j, k := range denied {
		looks[k] = res[j]
	}
	return nil
}

// spendHeld is LookThenSpend's spending when no request without a delay
// blocks but those with a delay that held names have no room now: they
// are decided first, with their cost. If one that enforces refuses, the
// others spend nothing (reservations made are given back where s can) and
// keep their looks; otherwise the rest are decided with their cost, as one
// batch. The results are written to looks.
func spendHeld(ctx context.Context, s Store, reqs []Request, held []int, looks []Result, now time.Time) error {
	first := make([]Request, len(held))
	for j, k := range held {
		first[j] = reqs[k]
	}
	res, err := decideBatch(ctx, s, first, now)
	if err != nil {
		return err
	}
	refused := false
	for j, k := range held {
		refused = refused || res[j].Err == nil && !res[j].Decision.Allowed && !reqs[k].Shadow
	}
	if refused {
		c, _ := s.(Canceler)
		for j, k := range held {
			switch d := res[j].Decision; {
			case res[j].Err != nil || !d.Allowed:
				looks[k] = res[j] // the denial, for its Retry-After
			case d.Delay > 0 && c != nil:
				_, _ = c.Cancel(context.WithoutCancel(ctx), reqs[k].Key, reqs[k].Limit, d.Reservation, reqs[k].Cost)
			}
		}
		return nil
	}
	var rest []Request
	for k := range reqs {
		if !slices.Contains(held, k) {
			rest = append(rest, reqs[k])
		}
	}
	spent, err := decideBatch(ctx, s, rest, now)
	if err != nil {
		return err
	}
	j, h := 0, 0
	for k := range reqs {
		if h < len(held) && held[h] == k {
			looks[k], h = res[h], h+1
		} else {
			looks[k], j = spent[j], j+1
		}
	}
	return nil
}
