package store

import "testing"

func TestKeyIsUnambiguous(t *testing.T) {
	cases := [][]string{
		{"a_b", "c"}, {"a", "b_c"}, {"a:b", "c"}, {"a", "b:c"}, {"1:a", ""}, {"", "1:a"},
		{"ab"}, {"a", "b"}, {"a", "", "b"}, {"a", "b", ""},
	}
	seen := map[string][]string{}
	for _, c := range cases {
		k := Key(c[0], c[1:]...)
		if prev, ok := seen[k]; ok {
			t.Fatalf("Key(%q) == Key(%q) == %q", c, prev, k)
		}
		seen[k] = c
	}
}

func FuzzKeyIsUnambiguous(f *testing.F) {
	f.Add("claims", "partner-a", "claims", "partner-a")
	f.Add("a_b", "c", "a", "b_c")
	f.Add("1:", "x", "", "1:x")
	f.Fuzz(func(t *testing.T, r1, p1, r2, p2 string) {
		if (r1 == r2 && p1 == p2) != (Key(r1, p1) == Key(r2, p2)) {
			t.Fatalf("Key(%q,%q)=%q Key(%q,%q)=%q", r1, p1, Key(r1, p1), r2, p2, Key(r2, p2))
		}
	})
}
