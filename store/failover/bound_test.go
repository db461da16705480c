package failover_test

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
	"github.com/sluice-rl/sluice/store/memory"
)

// boundStore is a store with a bound of its own.
type boundStore struct {
	store.Store
	d time.Duration
}

func (b boundStore) DecideBound() (time.Duration, bool) { return b.d, true }

// TestDecideBound: the failover store is as bounded as its shared store,
// and with on_failure local as the shared store and the fallback after
// it; not at all if either has no bound.
func TestDecideBound(t *testing.T) {
	shared := boundStore{memory.New(memory.Options{}), 50 * time.Millisecond}
	for _, tc := range []struct {
		name     string
		shared   store.Store
		policy   store.FailurePolicy
		fallback store.Store
		want     time.Duration
		ok       bool
	}{
		{"open", shared, store.FailOpen, nil, 50 * time.Millisecond, true},
		{"closed", shared, store.FailClosed, nil, 50 * time.Millisecond, true},
		{"local", shared, store.FailLocal, boundStore{memory.New(memory.Options{}), time.Millisecond}, 51 * time.Millisecond, true},
		{"local, unbounded fallback", shared, store.FailLocal, struct{ store.Store }{memory.New(memory.Options{})}, 0, false},
		{"unbounded shared", struct{ store.Store }{memory.New(memory.Options{})}, store.FailOpen, nil, 0, false},
	} {
		fs, err := failover.New(failover.Options{Shared: tc.shared, OnFailure: tc.policy, Fallback: tc.fallback})
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := fs.DecideBound(); d != tc.want || ok != tc.ok {
			t.Errorf("%s: DecideBound %v, %v; want %v, %v", tc.name, d, ok, tc.want, tc.ok)
		}
		_ = fs.Close()
	}
}
