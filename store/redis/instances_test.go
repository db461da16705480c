package redis

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
)

// TestAnnounceAndInstances: two stores on one prefix see each other's
// announcements, with how long ago each was seen; one that stops
// announcing is gone once its TTL has passed; a store on another prefix
// sees none of them. On a Cluster too (one hash-tagged key).
func TestAnnounceAndInstances(t *testing.T) {
	srv := redistest.StartServer(t)
	testAnnounceAndInstances(t, []string{srv.Addr})
}

func TestAnnounceAndInstancesOnACluster(t *testing.T) {
	c := redistest.StartCluster(t)
	testAnnounceAndInstances(t, c.Addrs)
}

func testAnnounceAndInstances(t *testing.T, addrs []string) {
	ctx := context.Background()
	prefix := redistest.KeyPrefix(t)
	a, b, other := openPrefix(t, addrs, false, prefix), openPrefix(t, addrs, false, prefix), open(t, addrs, false)
	if err := a.Announce(ctx, Instance{ID: "a", Version: "v1", Rules: map[string]string{"claims": "r1"}}, time.Minute); err != nil {
		t.Fatalf("Announce: %v", err)
	}
	if err := b.Announce(ctx, Instance{ID: "b", Version: "v2", Rules: map[string]string{"claims": "r2"}}, 300*time.Millisecond); err != nil {
		t.Fatalf("Announce: %v", err)
	}
	got, err := a.Instances(ctx)
	if err != nil {
		t.Fatalf("Instances: %v", err)
	}
	slices.SortFunc(got, func(x, y Instance) int { return strings.Compare(x.ID, y.ID) })
	if len(got) != 2 || got[0].ID != "a" || got[0].Version != "v1" || got[1].Rules["claims"] != "r2" || got[0].Seen > 10*time.Second {
		t.Fatalf("Instances: %+v, want a (v1) and b (v2), seen just now", got)
	}
	if o, err := other.Instances(ctx); err != nil || len(o) != 0 {
		t.Errorf("another prefix: %+v, %v; want none", o, err)
	}
	waitFor(t, "b's announcement to expire", func() bool {
		got, err := b.Instances(ctx)
		return err == nil && len(got) == 1 && got[0].ID == "a"
	})
}
