package memory

import (
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestTableMatchesMap runs random inserts, lookups and removals on a table
// and on a Go map side by side, with a good hash and with hashes that
// collide a lot (long probe runs, wrap-around at the end of the slots).
func TestTableMatchesMap(t *testing.T) {
	seed := maphash.MakeSeed()
	hashes := map[string]func(string) uint64{
		"maphash":  func(s string) uint64 { return maphash.String(seed, s) },
		"3 homes":  func(s string) uint64 { return uint64(len(s)%3) << 32 },
		"last":     func(s string) uint64 { return uint64(1<<32-1) << 32 },
		"same tag": func(s string) uint64 { return 7 << 32 },
	}
	for name, hash := range hashes {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			tab := table{hash: hash}
			model := map[string]int64{}
			steps := 20_000
			if name != "maphash" {
				steps = 5_000 // every lookup walks a long run of slots
			}
			for step := range steps {
				key := strconv.Itoa(rng.IntN(600))
				i := tab.find(hash(key), key)
				want, ok := model[key]
				if (i >= 0) != ok || ok && tab.at(i).a != want {
					t.Fatalf("step %d: find(%q) = %d, model has %v (%d)", step, key, i, ok, want)
				}
				switch {
				case !ok:
					tab.insert(hash(key), key).a = int64(step)
					model[key] = int64(step)
				case rng.IntN(2) == 0:
					tab.remove(i)
					delete(model, key)
				}
				if step%1000 == 0 {
					tab.shrink()
				}
			}
			checkTable(t, &tab, model)
			for key := range model {
				tab.remove(tab.find(hash(key), key))
				delete(model, key)
			}
			tab.shrink()
			checkTable(t, &tab, model)
			if len(tab.slots) != minSlots || len(tab.chunks) != 1 {
				t.Errorf("empty table kept %d slots, %d chunks", len(tab.slots), len(tab.chunks))
			}
		})
	}
}

func checkTable(t *testing.T, tab *table, model map[string]int64) {
	t.Helper()
	if tab.n != len(model) {
		t.Fatalf("table has %d entries, model %d", tab.n, len(model))
	}
	used := 0
	for _, v := range tab.slots {
		if v != 0 {
			used++
			if idx := int(uint32(v)) - 1; idx >= tab.n {
				t.Fatalf("slot points at entry %d of %d", idx, tab.n)
			}
		}
	}
	if used != tab.n {
		t.Fatalf("%d slots used for %d entries", used, tab.n)
	}
	for key, want := range model {
		i := tab.find(tab.hash(key), key)
		if i < 0 || tab.at(i).a != want {
			t.Fatalf("find(%q) = %d, want the entry holding %d", key, i, want)
		}
	}
}

func TestKthLargest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		a := make([]uint32, 1+rng.IntN(50))
		for i := range a {
			a[i] = rng.Uint32N(20) // many duplicates
		}
		k := 1 + rng.IntN(len(a))
		sorted := slices.Clone(a)
		slices.Sort(sorted)
		want := sorted[len(sorted)-k]
		if got := kthLargest(a, k); got != want {
			t.Fatalf("kthLargest(%v, %d) = %d, want %d", sorted, k, got, want)
		}
	}
}
