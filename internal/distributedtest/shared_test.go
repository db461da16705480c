package distributedtest

import (
	"sync"
	"testing"

	"github.com/sluice-rl/sluice/internal/redistest"
)

// sharedSetup is three instances counting in Redis at addrs, 100/m per
// client. The timeout is generous and failures answer 503, so that a slow
// round trip on a loaded machine shows up as a 503 rather than as a request
// passed without being counted.
func sharedSetup(t *testing.T, addrs []string) setup {
	return setup{addrs: addrs, prefix: redistest.KeyPrefix(t), timeout: "5s", onFailure: "closed", instances: 3, rate: "100/m"}
}

// floodAndBystander sends partner A's 300 requests over the instances in
// turn while partner B sends 20, and returns both answers' status counts.
func floodAndBystander(t *testing.T, insts []*instance) (a, b statuses) {
	t.Helper()
	c := newClient(t)
	var wg sync.WaitGroup
	wg.Go(func() { b = sendRoundRobin(t, c, insts, "partner-b", 20, 1) })
	a = sendRoundRobin(t, c, insts, "partner-a", 300, 6)
	wg.Wait()
	return a, b
}

// The story of DESIGN.md with three instances: partner A's buggy program
// sends 300 requests, round robin over the instances; 100 reach the claims
// service, however they were spread. Partner B notices nothing.
func TestThreeInstancesShareOneCounter(t *testing.T) {
	srv := redistest.StartServer(t)
	up := newUpstream(t)
	insts := startInstances(t, 3, sharedSetup(t, []string{srv.Addr}), up)
	a, b := floodAndBystander(t, insts)
	if got := up.count("partner-a"); got != 100 || a[200] != 100 || a[429] != 200 {
		t.Errorf("partner A: %d of 300 reached the upstream (answers %v), want 100 (and 200×429)", got, a)
	}
	if got := up.count("partner-b"); got != 20 || b[200] != 20 {
		t.Errorf("partner B: %d of 20 reached the upstream (answers %v), want all 20", got, b)
	}
}

// The same on a three-master Redis Cluster: each client's counter lives on
// one node (its hash tag), wherever the instance's request lands.
func TestThreeInstancesShareOneCounterOnACluster(t *testing.T) {
	cl := redistest.StartCluster(t)
	up := newUpstream(t)
	insts := startInstances(t, 3, sharedSetup(t, cl.Addrs), up)
	a, b := floodAndBystander(t, insts)
	if got := up.count("partner-a"); got != 100 || a[200] != 100 || a[429] != 200 {
		t.Errorf("partner A: %d of 300 reached the upstream (answers %v), want 100 (and 200×429)", got, a)
	}
	if got := up.count("partner-b"); got != 20 || b[200] != 20 {
		t.Errorf("partner B: %d of 20 reached the upstream (answers %v), want all 20", got, b)
	}
}

// Seed 000's first mistake, kept as a test: three instances each with its
// own (memory) counter let partner A through three times over.
func TestThreeMemoryStoresEachCountOnTheirOwn(t *testing.T) {
	up := newUpstream(t)
	insts := startInstances(t, 3, setup{memory: true, rate: "100/m"}, up)
	a, b := floodAndBystander(t, insts)
	if got := up.count("partner-a"); got != 300 || a[200] != 300 {
		t.Errorf("partner A: %d of 300 reached the upstream (answers %v); three separate counters of 100 pass all 300", got, a)
	}
	if got := up.count("partner-b"); got != 20 || b[200] != 20 {
		t.Errorf("partner B: %d of 20 reached the upstream (answers %v), want 20", got, b)
	}
}

// Once partner A is limited, its retries are answered from the instance's
// memory of Redis's denial until Retry-After: they cost Redis nothing.
func TestLimitedCallerDoesNotReachRedis(t *testing.T) {
	srv := redistest.StartServer(t)
	up := newUpstream(t)
	insts := startInstances(t, 3, sharedSetup(t, []string{srv.Addr}), up)
	c := newClient(t)
	if a := sendRoundRobin(t, c, insts, "partner-a", 103, 1); a[200] != 100 || a[429] != 3 {
		t.Fatalf("partner A's first 103 requests: %v, want 100×200 3×429 (each instance has seen a denial)", a)
	}
	waitCached(t, c, insts, "partner-a")
	cachedBefore := metric(t, c, insts[0], "sluice_store_cached_rejections_total")
	before := redistest.ScriptCalls(t, srv.Addr)
	one := sendRoundRobin(t, c, insts[:1], "partner-a", 200, 4)
	afterOne := redistest.ScriptCalls(t, srv.Addr)
	all := sendRoundRobin(t, c, insts, "partner-a", 200, 4)
	afterAll := redistest.ScriptCalls(t, srv.Addr)
	t.Logf("EVALSHA/EVAL calls on Redis: %d for 200 rejected requests on one instance, %d for 200 over three",
		afterOne-before, afterAll-afterOne)
	if before < 103 {
		t.Fatalf("Redis reports %d script calls after 103 decisions: INFO commandstats is not read right", before)
	}
	if one[429] != 200 || all[429] != 200 {
		t.Fatalf("partner A while limited: %v on one instance, %v over three; want 200×429 each", one, all)
	}
	if afterOne != before || afterAll != afterOne {
		t.Errorf("limited partner A's retries reached Redis: %d script calls for 200 on one instance, %d for 200 over three; want 0",
			afterOne-before, afterAll-afterOne)
	}
	if got := metric(t, c, insts[0], "sluice_store_cached_rejections_total") - cachedBefore; got < 200+200/3 {
		t.Errorf("sluice_store_cached_rejections_total grew by %v on instance 0, want at least %d", got, 200+200/3)
	}
	if got := up.count("partner-a"); got != 100 {
		t.Errorf("%d of partner A's requests reached the upstream, want 100", got)
	}
}
