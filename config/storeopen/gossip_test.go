package storeopen_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/config/storeopen"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store/gossip"
)

// TestOpenGossip: store type gossip opens a gossip store, alone while the
// instance it joins does not answer, which decides exactly.
func TestOpenGossip(t *testing.T) {
	sc, err := config.ParseStore("s.yaml", []byte("store: {type: gossip, gossip: {bind: 127.0.0.1:0, join: [127.0.0.1:1], interval: 50ms}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	st := open(t, sc, storeopen.Options{})
	gs, ok := st.(*gossip.Store)
	if !ok {
		t.Fatalf("Open gave a %T", st)
	}
	if m := gs.Members(); len(m) != 1 || !m[0].Self {
		t.Errorf("members %+v, want itself alone", m)
	}
	if d, _ := decide(t, st, "k"); !d.Allowed {
		t.Errorf("first request denied: %+v", d)
	}
	if d, _ := decide(t, st, "k"); d.Allowed {
		t.Errorf("second request of 1/m allowed")
	}
}

// TestGossipAlgorithms: the configuration refuses exactly the algorithms
// that the gossip store does not keep.
func TestGossipAlgorithms(t *testing.T) {
	for _, alg := range limiter.Algorithms {
		text := fmt.Sprintf("listen: 127.0.0.1:8080\nupstream: http://127.0.0.1:9000\nstore: {type: gossip, gossip: {bind: 127.0.0.1:7946, join: [127.0.0.1:7947]}}\n"+
			"rules: [{name: a, rate: 10/s, algorithm: %v}]\n", alg)
		_, err := config.Parse("t.yaml", []byte(text))
		refused := err != nil && strings.Contains(err.Error(), "not kept by store type gossip")
		if refused == gossip.Supported(alg) {
			t.Errorf("%v: refused %v, but gossip.Supported says %v (%v)", alg, refused, gossip.Supported(alg), err)
		}
	}
}

// TestGossipEnvoyAlgorithms: rule files decided on the gossip store refuse
// exactly the algorithms it does not keep, as the configuration's rules.
func TestGossipEnvoyAlgorithms(t *testing.T) {
	path := filepath.Join(t.TempDir(), "edge.yaml")
	for _, alg := range limiter.Algorithms {
		text := fmt.Sprintf("domain: edge\ndescriptors:\n  - {key: k, rate_limit: {unit: second, requests_per_unit: 10, algorithm: %v}}\n", alg)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := config.LoadEnvoyFor([]string{path}, config.Store{Type: "gossip"})
		refused := err != nil && strings.Contains(err.Error(), "not kept by store type gossip")
		if refused == gossip.Supported(alg) {
			t.Errorf("%v: refused %v, but gossip.Supported says %v (%v)", alg, refused, gossip.Supported(alg), err)
		}
	}
}
