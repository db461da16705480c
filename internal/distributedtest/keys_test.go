package distributedtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
)

// adminDo sends method path to inst's admin side and returns the status
// and body.
func adminDo(t *testing.T, c *http.Client, inst *instance, method, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, inst.admin+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}

// limitEverywhere spends partner-a's 5 requests and sends more to each
// instance until each answers its 429s from its cached rejection: the
// state a reset must undo on every instance.
func limitEverywhere(t *testing.T, c *http.Client, insts []*instance) {
	t.Helper()
	sendRoundRobin(t, c, insts, "partner-a", 5, 1)
	waitCached(t, c, insts, "partner-a")
}

// waitCached sends client's requests, limited already, to each instance
// until each answers one from its cached rejection (its
// sluice_store_cached_rejections_total grows). An instance caches
// rejections only once it hears resets: its subscription to the reset
// channel is made soon after it starts, a while later on a loaded machine.
func waitCached(t *testing.T, c *http.Client, insts []*instance, client string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // an upper bound only
	for i, inst := range insts {
		for cached := metric(t, c, inst, "sluice_store_cached_rejections_total"); metric(t, c, inst, "sluice_store_cached_rejections_total") <= cached; {
			if a := get(c, inst, client); a.status != 429 {
				t.Fatalf("instance %d: %s got %d, want 429", i, client, a.status)
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance %d caches no rejection", i)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// TestResetClearsEveryInstance: three instances on one Redis; partner-a
// is limited, each instance answering its 429s from its own cached
// rejection. DELETE /api/v1/keys on one instance resets the counter and
// every instance's cache: partner-a's next request passes on each of them.
func TestResetClearsEveryInstance(t *testing.T) {
	srv := redistest.StartServer(t)
	testResetClearsEveryInstance(t, []string{srv.Addr})
}

// TestResetClearsEveryInstanceOnACluster is the same on a three-master
// Redis Cluster: the counter's key and the reset channel each live on the
// node of their hash slot.
func TestResetClearsEveryInstanceOnACluster(t *testing.T) {
	cl := redistest.StartCluster(t)
	testResetClearsEveryInstance(t, cl.Addrs)
}

func testResetClearsEveryInstance(t *testing.T, addrs []string) {
	up := newUpstream(t)
	s := setup{addrs: addrs, prefix: redistest.KeyPrefix(t), timeout: "5s", onFailure: "closed", instances: 3, rate: "5/m"}
	insts := startInstances(t, 3, s, up)
	c := newClient(t)
	limitEverywhere(t, c, insts)
	const path = "/api/v1/keys?rule=claims&client=partner-a"
	for i, inst := range insts {
		status, body := adminDo(t, c, inst, http.MethodGet, path)
		var got struct {
			Remaining int64
			Counter   string
			RetryS    float64 `json:"retry_s"`
		}
		if err := json.Unmarshal([]byte(body), &got); status != 200 || err != nil || got.Remaining != 0 || got.Counter != "shared" || got.RetryS <= 0 {
			t.Fatalf("instance %d: GET %s: %d %s; want the shared counter spent", i, path, status, body)
		}
	}
	status, body := adminDo(t, c, insts[1], http.MethodDelete, path)
	if status != 200 || !strings.Contains(body, `"reset": true`) || strings.Contains(body, "warning") {
		t.Fatalf("DELETE %s: %d %s; want a reset every instance confirmed", path, status, body)
	}
	for _, i := range []int{2, 0, 1} {
		if a := get(c, insts[i], "partner-a"); a.status != 200 {
			t.Errorf("instance %d after the reset: partner-a got %d %s, want 200", i, a.status, a.body)
		}
	}
	if got := up.count("partner-a"); got != 8 {
		t.Errorf("partner-a: %d requests reached the upstream, want 8 (5, then 3 after the reset)", got)
	}
}
