package redis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/storetest"
)

// TestConformance runs the store conformance suite on a standalone Redis,
// with caller time so that the tables' clock is the one that counts.
func TestConformance(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, []string{srv.Addr}, true)
	})
	t.Run("decide_all", func(t *testing.T) {
		runDecideAll(t, func(t *testing.T) store.Store { return open(t, []string{srv.Addr}, true) })
	})
}

// TestCluster runs the conformance suite, the settle tables, the batch
// comparison and a short differential replay on a three-master Redis
// Cluster, reached through all its nodes and through one of them.
func TestCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	t.Run("conformance", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			return open(t, c.Addrs, true)
		})
	})
	t.Run("decide_all", func(t *testing.T) {
		runDecideAll(t, func(t *testing.T) store.Store { return open(t, c.Addrs, true) })
	})
	t.Run("settle", func(t *testing.T) {
		storetest.RunSettle(t, func(t *testing.T) store.Store { return open(t, c.Addrs, true) })
	})
	t.Run("leases", func(t *testing.T) {
		storetest.RunLeases(t, func(t *testing.T) storetest.LeaseStore {
			return open(t, c.Addrs, true)
		})
	})
	t.Run("one_seed", func(t *testing.T) {
		checkBatch(t, open(t, c.Addrs[1:2], true), open(t, c.Addrs, true))
	})
	t.Run("batch_spans_nodes", func(t *testing.T) {
		s := open(t, c.Addrs, true)
		checkBatch(t, s, open(t, c.Addrs, true))
		checkSpread(t, s, 300)
	})
	t.Run("redis_time", func(t *testing.T) {
		s := open(t, c.Addrs, false)
		l := mustLimit(t, limiter.GCRA, 3, time.Hour, 0)
		for i := range 4 {
			if d := decide(t, s, store.RawKey("time"), l, time.Time{}, 1); d.Allowed != (i < 3) {
				t.Fatalf("request %d: %+v", i, d)
			}
		}
	})
}

// notAtomic names the DecideAll tables whose requests the multi-rule
// script cannot decide (DecideAll decides them look then spend, not all
// or nothing: see its documentation), and why.
var notAtomic = map[string]string{
	"all/same_key_twice":         "the multi-rule script decides each key once: a key asked twice is decided look then spend",
	"all/same_key_twice_refused": "the multi-rule script decides each key once: a key asked twice is decided look then spend",
}

// runDecideAll is storetest.RunDecideAll but for the tables of notAtomic.
func runDecideAll(t *testing.T, newStore func(t *testing.T) store.Store) {
	for _, tb := range storetest.AllTables() {
		t.Run(tb.Name, func(t *testing.T) {
			if why, ok := notAtomic[tb.Name]; ok {
				t.Skip(why)
			}
			s := newStore(t)
			defer s.Close()
			storetest.CheckAll(t, s, tb)
		})
	}
}

// checkSpread checks that n keys of a batch landed on every master: the
// hash tags spread them, and each is one key on one node.
func checkSpread(t *testing.T, s *Store, n int) {
	t.Helper()
	l := mustLimit(t, limiter.FixedWindow, 5, time.Minute, 0)
	reqs := make([]store.Request, n)
	for i := range reqs {
		reqs[i] = store.Request{Key: store.RawKey(fmt.Sprintf("spread:%d", i)), Limit: l, Cost: 1}
	}
	res, err := s.DecideEach(context.Background(), nil, reqs, epoch)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil || !r.Decision.Allowed || r.Decision.Remaining != 4 {
			t.Fatalf("request %d: %+v", i, r)
		}
	}
	nodes := s.client.Nodes()
	if len(nodes) < 3 {
		t.Fatalf("client sees %d nodes, want 3", len(nodes))
	}
	for addr, node := range nodes {
		keys, err := node.Do(context.Background(), node.B().Dbsize().Build()).AsInt64()
		if err != nil || keys == 0 {
			t.Errorf("node %s holds %d keys (err %v): the batch did not spread", addr, keys, err)
		}
	}
}
