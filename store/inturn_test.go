package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/storetest"
)

// batchOnly is the reference store seen as a store.Store and a
// store.Canceler, whose DecideAll inTurn replaces.
type batchOnly struct {
	store.Store
	store.Canceler
}

// inTurn decides all or nothing by store.LookThenSpend over its store.
type inTurn struct{ batchOnly }

func (s inTurn) DecideAll(ctx context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	return store.LookThenSpend(ctx, s.batchOnly, dst, reqs, now)
}

// TestLookThenSpend runs the DecideAll tables through LookThenSpend, one
// caller at a time: then it decides as the reference store's DecideAll
// does, but for a key asked twice in one call (looked at once for both).
func TestLookThenSpend(t *testing.T) {
	for _, tb := range storetest.AllTables() {
		t.Run(tb.Name, func(t *testing.T) {
			if tb.Name == "all/same_key_twice" || tb.Name == "all/same_key_twice_refused" {
				t.Skip("LookThenSpend looks at a key asked twice once for both")
			}
			ref := storetest.NewReference()
			defer ref.Close()
			storetest.CheckAll(t, inTurn{batchOnly{ref, ref.(store.Canceler)}}, tb)
		})
	}
}

// failing is a store whose batches fail.
type failing struct{ store.Store }

func (failing) DecideEach(_ context.Context, dst []store.Result, _ []store.Request, _ time.Time) ([]store.Result, error) {
	return dst, store.ErrClosed
}

// TestLookThenSpendError wants the store's error back, and dst as it was.
func TestLookThenSpendError(t *testing.T) {
	l, err := limiter.New(limiter.FixedWindow, 1, time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	reqs := []store.Request{{Key: store.RawKey("a"), Limit: l, Cost: 1}, {Key: store.RawKey("b"), Limit: l, Cost: 1}}
	dst := make([]store.Result, 1, 4)
	res, err := store.LookThenSpend(context.Background(), failing{}, dst, reqs, time.Unix(0, 0))
	if err != store.ErrClosed || len(res) != 1 {
		t.Errorf("LookThenSpend over a failing store: %d results, %v; want dst's 1, store.ErrClosed", len(res), err)
	}
}
