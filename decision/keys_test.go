package decision

import (
	"net/netip"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// The key cache gives the keys stateKey would make without it, and stays
// bounded however many addresses arrive.
func TestKeyCache(t *testing.T) {
	pol, err := policy.Compile(policy.Policy{
		Clients: policy.Clients{Unknown: policy.UnknownAnonymous, List: []policy.Client{{ID: "partner-a", Keys: []string{"key-a"}}}},
		Rules: []policy.Rule{
			{Name: "per-client", Key: policy.KeySpec{Kind: policy.KeyClient}, Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 5, Period: time.Minute}},
			{Name: "per-ip", Key: policy.KeySpec{Kind: policy.KeyIP}, Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 5, Period: time.Minute}},
			{Name: "all", Key: policy.KeySpec{Kind: policy.KeyGlobal}, Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 5, Period: time.Minute}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{}
	keys := e.keysFor(pol)
	partner, _ := pol.CallerByKey("key-a")
	v := &Verdict{req: Request{Header: noHeaders{}}}
	const n = keyShards * maxShardKeys / 2 // three keys an address: more than the bound
	for k := range n {
		addr := netip.AddrFrom4([4]byte{10, byte(k >> 16), byte(k >> 8), byte(k)})
		for _, caller := range []*policy.Caller{partner, pol.Anonymous()} {
			for i := range pol.Rules() {
				cached := stateKey(pol, caller, i, &ipGroup{pol: pol, addr: addr, keys: keys}, v)
				again := stateKey(pol, caller, i, &ipGroup{pol: pol, addr: addr, keys: keys}, v)
				want := makeKey(pol, caller, i, &ipGroup{pol: pol, addr: addr}, "")
				if cached != want || again != want {
					t.Fatalf("%v rule %d caller %q: %q then %q, want %q", addr, i, caller.ID, cached, again, want)
				}
			}
		}
	}
	total := 0
	for i := range keys.shards {
		total += len(keys.shards[i].keys)
	}
	if total > keyShards*maxShardKeys {
		t.Errorf("%d keys cached, bound %d", total, keyShards*maxShardKeys)
	}
	if e.keysFor(pol) != keys {
		t.Error("a second call for the same policy made a new cache")
	}
}
