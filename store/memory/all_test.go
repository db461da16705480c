package memory

import (
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// TestDecideAllConcurrent has goroutines ask two rules of one request
// together, half of them naming the rules in the other order (their shards
// then lock in one order all the same), under limits of 100 and 50 a
// minute at one instant: exactly 50 pass, each spending on both rules, and
// the refused spend on neither, so the wide rule has exactly 50 left. Deciding first and spending after,
// without holding both shards, lets the wide rule be spent by requests
// that the narrow one then refuses.
func TestDecideAllConcurrent(t *testing.T) {
	s := newTest(t, Options{Shards: 64})
	wide := store.Request{Key: store.NewKey("wide", "c"), Limit: mustLimit(t, limiter.FixedWindow, 100, time.Minute), Cost: 1}
	narrow := store.Request{Key: store.NewKey("narrow", "c"), Limit: mustLimit(t, limiter.FixedWindow, 50, time.Minute), Cost: 1}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		passed int
	)
	for g := range 16 {
		reqs := []store.Request{wide, narrow}
		if g%2 == 1 {
			reqs = []store.Request{narrow, wide}
		}
		wg.Go(func() {
			for range 20 {
				res, err := s.DecideAll(ctx, nil, reqs, t0)
				if err != nil {
					t.Error(err)
					return
				}
				if res[0].Decision.Allowed && res[1].Decision.Allowed { // else one refused, the other looked
					mu.Lock()
					passed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if passed != 50 {
		t.Errorf("%d requests passed, want 50", passed)
	}
	if d := mustLook(t, s, wide.Key, wide.Limit, t0); d.Remaining != 50 {
		t.Errorf("the wide rule has %d left, want 50: requests the narrow one refused spent it", d.Remaining)
	}
}

// TestDecideAllFullStore fills a one-key store with a limited key: a new
// key of a request's two rules then finds no room and is decided on its
// overflow counter (Shared), and the request still gets both decisions.
func TestDecideAllFullStore(t *testing.T) {
	s := newTest(t, Options{MaxKeys: 1, Shards: 1})
	one := mustLimit(t, limiter.FixedWindow, 1, time.Minute)
	held := store.NewKey("held", "c")
	if d := mustDecide(t, s, held, one, t0); !d.Allowed {
		t.Fatal(d)
	}
	reqs := []store.Request{
		{Key: store.NewKey("new", "c"), Limit: mustLimit(t, limiter.FixedWindow, 5, time.Minute), Cost: 1},
		{Key: held, Limit: one, Cost: 0},
	}
	res, err := s.DecideAll(ctx, nil, reqs, t0)
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Shared || !res[0].Decision.Allowed || res[0].Decision.Remaining != 4 || res[1].Shared || !res[1].Decision.Allowed {
		t.Errorf("got %+v, want the new key allowed on its overflow counter (4 left), the held key's look", res)
	}
}

// TestDecideAllClosed wants store.ErrClosed after Close.
func TestDecideAllClosed(t *testing.T) {
	s := newTest(t, Options{})
	s.Close()
	reqs := []store.Request{{Key: store.RawKey("k"), Limit: mustLimit(t, limiter.GCRA, 1, time.Second), Cost: 1}}
	if res, err := s.DecideAll(ctx, nil, reqs, t0); err != store.ErrClosed || len(res) != 0 {
		t.Errorf("DecideAll after Close: %v, %v; want no results, store.ErrClosed", res, err)
	}
}

// TestDecideAllWithDecide mixes, on two keys at one instant, goroutines
// that ask both rules together (DecideAll) with goroutines that spend on
// one of them alone (Decide), asking far more than the limits allow:
// every unit each key admits is counted once, so each admits exactly its
// limit, and ends with none left. A DecideAll whose commit does not
// exclude the single decisions made since it decided (a copy written back
// over them) admits more.
func TestDecideAllWithDecide(t *testing.T) {
	for _, alg := range limiter.Algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			s := newTest(t, Options{Shards: 64})
			wide := store.Request{Key: store.NewKey("wide", "c"), Limit: mustLimit(t, alg, 100, time.Minute), Cost: 1}
			narrow := store.Request{Key: store.NewKey("narrow", "c"), Limit: mustLimit(t, alg, 50, time.Minute), Cost: 1}
			var (
				wg                           sync.WaitGroup
				mu                           sync.Mutex
				both, wideAlone, narrowAlone int
			)
			for g := range 12 {
				wg.Go(func() {
					for range 40 {
						switch g % 3 {
						case 0:
							res, err := s.DecideAll(ctx, nil, []store.Request{wide, narrow}, t0)
							if err != nil {
								t.Error(err)
								return
							}
							mu.Lock()
							if res[0].Decision.Allowed && res[1].Decision.Allowed {
								both++
							}
							mu.Unlock()
						case 1, 2:
							r := wide
							if g%3 == 2 {
								r = narrow
							}
							d, err := s.Decide(ctx, r.Key, r.Limit, t0, 1)
							if err != nil {
								t.Error(err)
								return
							}
							if d.Allowed {
								mu.Lock()
								if g%3 == 1 {
									wideAlone++
								} else {
									narrowAlone++
								}
								mu.Unlock()
							}
						}
					}
				})
			}
			wg.Wait()
			if n := both + wideAlone; n != 100 {
				t.Errorf("wide admitted %d (%d together, %d alone), want exactly 100", n, both, wideAlone)
			}
			if n := both + narrowAlone; n != 50 {
				t.Errorf("narrow admitted %d (%d together, %d alone), want exactly 50", n, both, narrowAlone)
			}
			for _, r := range []store.Request{wide, narrow} {
				if d := mustLook(t, s, r.Key, r.Limit, t0); d.Remaining != 0 {
					t.Errorf("%s has %d left, want 0", r.Key.Rule(), d.Remaining)
				}
			}
		})
	}
}
