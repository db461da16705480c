package memory

import (
	"hash/maphash"
	"strconv"
	"strings"
	"testing"
)

// FuzzTable runs inserts, lookups, removals, shrinks and walks that remove
// entries, decoded from the input, on a table and on a Go map side by side.
// The first byte picks how many bits of the hash are kept (from none, every
// key at one home, to all), so that runs are long, keys share hashes and
// spill past the tail; checkTable checks the table's order at the end.
func FuzzTable(f *testing.F) {
	f.Add([]byte{64, 0, 1, 0, 2, 1, 1, 3, 9})
	f.Add([]byte{0, 0, 5, 0, 6, 0, 7, 1, 6, 2, 0, 4, 1})
	f.Add([]byte{3, 0, 200, 0, 201, 0, 202, 3, 0, 2, 0, 0, 203})
	seed := maphash.MakeSeed()
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		keep := uint(ops[0]) % 65 // bits of the hash kept, from the top
		hash := func(s string) uint64 {
			if keep == 0 {
				return 0
			}
			return maphash.String(seed, s) >> (64 - keep) << (64 - keep)
		}
		var tab table
		model := map[string]int64{}
		for i := 1; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%5, ops[i+1]
			// keys of several lengths, some past longKey
			key := strings.Repeat("k", int(arg)%3*150) + strconv.Itoa(int(arg))
			switch op {
			case 0: // decide: insert if absent
				if tab.find(hash(key), key) < 0 {
					tab.insert(hash(key), key).a = int64(i)
					model[key] = int64(i)
				}
			case 1: // remove if present
				if j := tab.find(hash(key), key); j >= 0 {
					tab.remove(j)
					delete(model, key)
				}
			case 2:
				tab.shrink()
			case 3: // a sweep: remove every entry whose value has arg's parity
				for j := tab.end() - 1; j >= 0; j-- {
					if e := tab.at(j); e.inUse() && e.a%2 == int64(arg%2) {
						delete(model, e.key())
						tab.remove(j)
					}
				}
			default: // look up
				j := tab.find(hash(key), key)
				want, ok := model[key]
				if (j >= 0) != ok || ok && tab.at(j).a != want {
					t.Fatalf("op %d: find(%q) = %d, model has %v (%d)", i, key, j, ok, want)
				}
			}
		}
		checkTable(t, &tab, model, hash)
	})
}
