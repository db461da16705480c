package memory

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// isGuest names the keys of the tests' guests.
func isGuest(key store.Key) bool { return strings.HasPrefix(key.String(), "guest-") }

// A flood of guests at their limit for a year takes no room from the main
// room's keys: a fresh key there still gets a counter of its own. Nor do
// the guests land on an overflow counter: each is counted on its own, the
// least recently used forgotten, and the store holds no more of them than
// MaxGuestKeys.
func TestGuestsHaveARoomOfTheirOwn(t *testing.T) {
	s := newTest(t, Options{MaxKeys: 8, MaxGuestKeys: 8, Shards: 1, Guest: isGuest})
	year := limiter.MustNew(limiter.FixedWindow, 1, 365*24*time.Hour, 0)
	hour := limiter.MustNew(limiter.FixedWindow, 2, time.Hour, 0)
	for i := range 1000 {
		if res := decideOne(t, s, store.RawKey(fmt.Sprint("guest-", i)), year); !res.Decision.Allowed || res.Shared {
			t.Fatalf("guest-%d's first request: %+v, want allowed on its own counter", i, res)
		}
	}
	for i := range 8 {
		if res := decideOne(t, s, store.RawKey(fmt.Sprint("main-", i)), hour); !res.Decision.Allowed || res.Shared || !s.has(store.RawKey(fmt.Sprint("main-", i))) {
			t.Fatalf("main-%d after the flood: %+v, want its own counter", i, res)
		}
	}
	if n := s.Len(); n != 16 {
		t.Errorf("Len() = %d, want 16 (8 guests, 8 main keys)", n)
	}
	// The main room's keys do not take the guests' room either: a guest
	// used since the flood keeps its count through a flood of main keys.
	mustDecide(t, s, store.RawKey("guest-999"), year, t0)
	for i := range 100 {
		decideOne(t, s, store.RawKey(fmt.Sprint("main-flood-", i)), hour)
	}
	if d := mustDecide(t, s, store.RawKey("guest-999"), year, t0); d.Allowed {
		t.Errorf("guest-999 was forgotten by a flood of main keys: %+v", d)
	}
}

// Evicting guests takes those not being limited first, then the least
// recently used: a guest that was used lately survives a flood.
func TestGuestsEvictedLeastRecentlyUsed(t *testing.T) {
	s := newTest(t, Options{MaxKeys: 8, MaxGuestKeys: 16, Shards: 1, Guest: isGuest})
	one := limiter.MustNew(limiter.FixedWindow, 1, time.Hour, 0)
	two := limiter.MustNew(limiter.FixedWindow, 2, time.Hour, 0)
	mustDecide(t, s, store.RawKey("guest-open"), two, t0) // 1 of 2: not limited
	mustDecide(t, s, store.RawKey("guest-kept"), one, t0) // limited
	for i := range 1000 {
		mustDecide(t, s, store.RawKey(fmt.Sprint("guest-flood-", i)), one, t0)
		if i%8 == 0 {
			if d := mustDecide(t, s, store.RawKey("guest-kept"), one, t0); d.Allowed {
				t.Fatalf("after %d flood keys guest-kept was forgotten", i+1)
			}
		}
	}
	if s.has(store.RawKey("guest-open")) {
		t.Errorf("guest-open, the oldest guest and not limited, was kept")
	}
}

// A guest's sliding_log entries are bounded apart from the main room's:
// a flood of guests' logs evicts guests, and a main key's log still fits.
func TestGuestLogsHaveABoundOfTheirOwn(t *testing.T) {
	s := newTest(t, Options{MaxLogEntries: limiter.MaxLogRate, MaxGuestLogEntries: 100, Shards: 1, Guest: isGuest})
	l := limiter.MustNew(limiter.SlidingLog, 10, time.Hour, 0)
	for i := range 100 {
		for j := range 10 {
			at := t0.Add(time.Duration(i*10+j) * time.Microsecond)
			if res := decideOneAt(t, s, store.RawKey(fmt.Sprint("guest-", i)), l, at); !res.Decision.Allowed || res.Shared {
				t.Fatalf("guest-%d's request %d: %+v, want allowed on its own log", i, j, res)
			}
		}
	}
	if used := s.guestLogs.used.Load(); used > 100 {
		t.Errorf("the guests hold %d entries, want at most 100", used)
	}
	if used := s.bound.used.Load(); used != 0 {
		t.Errorf("the guests' entries took %d of the main bound", used)
	}
	if res := decideOneAt(t, s, store.RawKey("main"), l, t0.Add(time.Second)); !res.Decision.Allowed || res.Shared {
		t.Errorf("a main key's log after the guests' flood: %+v", res)
	}
}

// A decision on the overflow counter says so (store.Result.Shared); a
// decision on the key's own counter does not.
func TestOverflowDecisionIsShared(t *testing.T) {
	s := newTest(t, Options{MaxKeys: 1, Shards: 1})
	l := limiter.MustNew(limiter.FixedWindow, 1, time.Hour, 0)
	if res := decideOne(t, s, store.NewKey("r", "a"), l); res.Shared {
		t.Errorf("the first key, on its own counter: %+v", res)
	}
	if res := decideOne(t, s, store.NewKey("r", "b"), l); !res.Shared || !res.Decision.Allowed {
		t.Errorf("a key without room: %+v, want allowed on the overflow counter", res)
	}
	if res := decideOne(t, s, store.NewKey("r", "c"), l); !res.Shared || res.Decision.Allowed {
		t.Errorf("the next key without room: %+v, want denied on the overflow counter", res)
	}
}

func decideOne(t *testing.T, s *Store, key store.Key, l limiter.Limit) store.Result {
	t.Helper()
	return decideOneAt(t, s, key, l, t0)
}

func decideOneAt(t *testing.T, s *Store, key store.Key, l limiter.Limit, at time.Time) store.Result {
	t.Helper()
	res, err := s.DecideEach(ctx, nil, []store.Request{{Key: key, Limit: l, Cost: 1}}, at)
	if err != nil || res[0].Err != nil {
		t.Fatalf("DecideEach(%q): %v %v", key, err, res)
	}
	return res[0]
}
