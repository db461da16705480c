package memory

import (
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestTableMatchesMap runs random inserts, lookups and removals on a table
// and on a Go map side by side, with a good hash and with hashes that
// collide a lot (long runs, and runs that spill past the tail when every
// key's home is the last one).
func TestTableMatchesMap(t *testing.T) {
	seed := maphash.MakeSeed()
	hashes := map[string]func(string) uint64{
		"maphash":  func(s string) uint64 { return maphash.String(seed, s) },
		"3 homes":  func(s string) uint64 { return uint64(len(s)%3) << 62 },
		"last":     func(s string) uint64 { return uint64(1<<32-1) << 32 },
		"same tag": func(s string) uint64 { return 7 << 32 },
	}
	for name, hash := range hashes {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var tab table
			model := map[string]int64{}
			steps := 20_000
			if name != "maphash" {
				steps = 5_000 // every lookup walks a long run
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
			checkTable(t, &tab, model, hash)
			for key := range model {
				tab.remove(tab.find(hash(key), key))
				delete(model, key)
			}
			tab.shrink()
			checkTable(t, &tab, model, hash)
			if tab.homes != minHomes || tab.end() > 2*minHomes {
				t.Errorf("empty table kept %d homes, %d positions", tab.homes, tab.end())
			}
		})
	}
}

// TestTableRemoveWhileWalking: a walk from the last position to the first
// that removes some entries (as dropExpired and makeRoom do) sees every
// entry once, however the removals shift the others back.
func TestTableRemoveWhileWalking(t *testing.T) {
	seed := maphash.MakeSeed()
	hash := func(s string) uint64 { return maphash.String(seed, s) }
	var tab table
	for i := range 5000 {
		key := strconv.Itoa(i)
		tab.insert(hash(key), key).a = int64(i)
	}
	seen := map[int64]int{}
	for i := tab.end() - 1; i >= 0; i-- {
		if e := tab.at(i); e.inUse() {
			if seen[e.a]++; e.a%3 != 0 {
				tab.remove(i)
			}
		}
	}
	model := map[string]int64{}
	for i := range int64(5000) {
		if seen[i] != 1 {
			t.Fatalf("the walk saw entry %d %d times", i, seen[i])
		}
		if i%3 == 0 {
			model[strconv.FormatInt(i, 10)] = i
		}
	}
	checkTable(t, &tab, model, hash)
}

// TestTableKeys: keys of every length, the empty one and ones whose length
// takes several bytes to write, are stored and found as they are.
func TestTableKeys(t *testing.T) {
	seed := maphash.MakeSeed()
	var tab table
	model := map[string]int64{}
	for i, n := range []int{0, 1, 127, 128, 254, 255, 256, 300, 16383, 16384, 70000} {
		key := strings.Repeat("k", n)
		tab.insert(maphash.String(seed, key), key).a = int64(i)
		model[key] = int64(i)
	}
	checkTable(t, &tab, model, func(s string) uint64 { return maphash.String(seed, s) })
	for i := range tab.end() {
		if e := tab.at(i); e.inUse() && model[e.key()] != e.a {
			t.Fatalf("entry %d holds a key of %d bytes", e.a, len(e.key()))
		}
	}
}

// checkTable checks that tab holds exactly model's keys, each where a
// lookup finds it: at or after its home, with no free position between,
// and after the entries of its run whose meta is below its own.
func checkTable(t *testing.T, tab *table, model map[string]int64, hash func(string) uint64) {
	t.Helper()
	if tab.n != len(model) {
		t.Fatalf("table has %d entries, model %d", tab.n, len(model))
	}
	used := 0
	for i := range tab.end() {
		e := tab.at(i)
		if !e.inUse() {
			continue
		}
		used++
		if want := metaOf(hash(e.key()), len(e.key())); e.meta != want {
			t.Fatalf("position %d: entry meta %#x, its key's %#x", i, e.meta, want)
		}
		for j := tab.home(e.meta); j < i; j++ {
			if !tab.at(j).inUse() {
				t.Fatalf("position %d: a free position %d lies between it and its home %d", i, j, tab.home(e.meta))
			}
		}
		if i > 0 && tab.at(i-1).meta > e.meta {
			t.Fatalf("position %d: meta %#x, after an entry whose meta is %#x", i, e.meta, tab.at(i-1).meta)
		}
	}
	if used != tab.n {
		t.Fatalf("%d positions used for %d entries", used, tab.n)
	}
	for key, want := range model {
		i := tab.find(hash(key), key)
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
