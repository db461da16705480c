package live_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/live"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store/memory"
)

type hdr map[string][]string

func (h hdr) Values(dst []string, name string) []string { return append(dst, h[name]...) }

func (h hdr) Names(dst []string) []string {
	for k := range h {
		dst = append(dst, k)
	}
	return dst
}

// A rule that counts by the access key's own header, and one whose header
// carries an access key as its value, are listed without the key: the
// snapshot names the client and says the value is withheld.
func TestNoAccessKeyShown(t *testing.T) {
	const keyA, keyB = "sk-live-partner-a-0123456789", "sk-live-partner-b-9876543210"
	pol, err := policy.Compile(policy.Policy{
		Clients: policy.Clients{List: []policy.Client{{ID: "partner-a", Keys: []string{keyA}}, {ID: "partner-b", Keys: []string{keyB}}}},
		Rules: []policy.Rule{
			{Name: "by-key", Match: policy.Match{Path: "/"}, Key: policy.KeySpec{Kind: policy.KeyHeader, Header: "X-API-Key"},
				Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 2, Period: time.Minute}},
			{Name: "tenant", Match: policy.Match{Path: "/"}, Key: policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant"},
				Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 2, Period: time.Minute}, Mode: policy.Shadow},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(epoch)
	mem := memory.New(memory.Options{Clock: clk})
	t.Cleanup(func() { _ = mem.Close() })
	l := live.New(pol, live.Options{})
	e, err := decision.New(decision.Options{Store: mem, Clock: clk,
		OnDecision: func(_ *decision.Request, rep *decision.Report) { l.Observe(clk.Now(), rep) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{keyA, keyB} {
		for range 4 {
			v := e.Decide(context.Background(), decision.Settings{Policy: pol}, decision.Request{Method: "GET", Path: "/x",
				Peer: netip.MustParseAddrPort("192.0.2.1:1234"), Header: hdr{"X-Api-Key": {key}, "X-Tenant": {key}}})
			v.Finish(&decision.Response{Passed: v.Pass, Status: 200})
		}
	}
	s := l.Snapshot(clk.Now(), live.Inputs{})
	body, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{keyA, keyB, "sk-live"} {
		if strings.Contains(string(body), key) {
			t.Errorf("the snapshot shows %q: %s", key, body)
		}
	}
	for _, name := range []string{"by-key", "tenant"} {
		v := rule(t, s, name)
		if len(v.Top) != 2 || v.Limited != 4 {
			t.Fatalf("%s: %+v, want both partners listed, 4 limited", name, v)
		}
		for _, c := range v.Top {
			if !strings.Contains(c.Counted, "(value withheld)") || !strings.HasPrefix(c.Client, "partner-") {
				t.Errorf("%s lists %+v, want the client named and the value withheld", name, c)
			}
		}
	}
}
