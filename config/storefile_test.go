package config

import (
	"testing"
	"time"
)

// TestParseStore: the store block of a rules-only file, or of a whole
// sluice file, is read as Parse reads it; without one, the defaults; a
// problem is reported at its position.
func TestParseStore(t *testing.T) {
	block := "store:\n  type: redis\n  redis: {addrs: [10.0.0.5:6379], timeout: 80ms, prefix: 'app:'}\n  on_failure: local\n  instances: 3\n"
	rules := "rules: [{name: a, rate: 1/s}]\n"
	whole, err := Parse("t.yaml", []byte(head+block+rules))
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{block + rules, head + block + rules} {
		s, err := ParseStore("t.yaml", []byte(text))
		if err != nil || !s.Equal(whole.Store) {
			t.Errorf("ParseStore:\n%+v, %v\nwant Parse's\n%+v", s, err, whole.Store)
		}
	}
	if whole.Store.Redis.Timeout != 80*time.Millisecond || whole.Store.Instances != 3 {
		t.Fatalf("Parse's store %+v", whole.Store)
	}
	plain, _ := Parse("t.yaml", []byte(head+rules))
	if s, err := ParseStore("t.yaml", []byte(rules)); err != nil || !s.Equal(plain.Store) || s.Type != "memory" {
		t.Errorf("no store block: %+v, %v; want the defaults, %+v", s, err, plain.Store)
	}
	_, err = ParseStore("t.yaml", []byte("store: {type: redis, on_failure: lokal}\n"+rules))
	if want := `t.yaml:1:34: store.on_failure: unknown value "lokal" (did you mean "local"? accepted: open, closed, local)`; err == nil || err.Error() != want {
		t.Errorf("bad store: %v, want %s", err, want)
	}
	if _, err := ParseStore("t.yaml", []byte("- a\n")); err == nil {
		t.Error("a list: no error")
	}
}

// TestParseStoreGossip reads a gossip block with every field, its key a
// secret in the environment.
func TestParseStoreGossip(t *testing.T) {
	t.Setenv("GOSSIP_TEST_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	s, err := ParseStore("s.yaml", []byte("store:\n  type: gossip\n  gossip:\n    bind: 127.0.0.1:7946\n    join: [127.0.0.1:7947, 127.0.0.1:7948]\n"+
		"    interval: 50ms\n    max_unsynced: 3\n    key: env:GOSSIP_TEST_KEY\n"))
	if err != nil {
		t.Fatal(err)
	}
	g := s.Gossip
	if s.Type != "gossip" || g.Bind != "127.0.0.1:7946" || len(g.Join) != 2 || g.Interval != 50*time.Millisecond ||
		g.MaxUnsynced != 3 || string(g.Key) != "0123456789abcdef0123456789abcdef" {
		t.Errorf("got %+v", s)
	}
	s, err = ParseStore("s.yaml", []byte("store: {type: gossip, gossip: {join: [10.0.0.2:7946]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if g := s.Gossip; g.Bind != DefaultGossipBind || g.Interval != DefaultGossipInterval || g.MaxUnsynced != DefaultGossipMaxUnsynced || g.Key != nil {
		t.Errorf("defaults: got %+v", g)
	}
}
