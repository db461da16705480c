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

func TestGroupKey(t *testing.T) {
	k := GroupKey(Key("client", "partner-a"), "claims", "tag")
	group, rest, ok := SplitGroup(k)
	if !ok || group != Key("client", "partner-a") || rest != Key("claims", "tag") {
		t.Fatalf("SplitGroup(%q) = %q, %q, %v", k, group, rest, ok)
	}
	for _, k := range []string{Key("claims", "partner-a"), "", "@", "@x:", "@3:ab", "@3:abc", "@-1:", "@01:a", "@+1:a", "@1", "@0:"} {
		if g, r, ok := SplitGroup(k); ok {
			t.Errorf("SplitGroup(%q) = %q, %q, true; want no group", k, g, r)
		}
	}
	if g, r, ok := SplitGroup("@0:x"); !ok || g != "" || r != "x" {
		t.Errorf(`SplitGroup("@0:x") = %q, %q, %v; want an empty group and the rest x`, g, r, ok)
	}
}

func FuzzGroupKeyIsUnambiguous(f *testing.F) {
	f.Add("6:client9:partner-a", "claims", "x", "6:client9:partner-a", "claims", "x")
	f.Add("a", "b", "c", "a:1", "b", "c")
	f.Add("", "1:a", "", "1:a", "", "")
	f.Fuzz(func(t *testing.T, g1, r1, p1, g2, r2, p2 string) {
		k1, k2 := GroupKey(g1, r1, p1), GroupKey(g2, r2, p2)
		if (g1 == g2 && r1 == r2 && p1 == p2) != (k1 == k2) {
			t.Fatalf("GroupKey(%q,%q,%q)=%q GroupKey(%q,%q,%q)=%q", g1, r1, p1, k1, g2, r2, p2, k2)
		}
		if k1 == Key(r2, p2) {
			t.Fatalf("GroupKey(%q,%q,%q) == Key(%q,%q) == %q", g1, r1, p1, r2, p2, k1)
		}
		if g, rest, ok := SplitGroup(k1); !ok || g != g1 || rest != Key(r1, p1) {
			t.Fatalf("SplitGroup(%q) = %q, %q, %v", k1, g, rest, ok)
		}
		if _, _, ok := SplitGroup(Key(r1, p1)); ok {
			t.Fatalf("SplitGroup(Key(%q,%q)) found a group", r1, p1)
		}
	})
}

// TestKeysAllocateOnce: keys are built per request, each in one allocation.
func TestKeysAllocateOnce(t *testing.T) {
	group, tag := Key("client", "partner-a"), "gcra" // a rule's algorithm, as httplimit tags keys
	if n := testing.AllocsPerRun(100, func() { _ = GroupKey(group, "claims", tag) }); n != 1 {
		t.Errorf("GroupKey: %v allocations, want 1", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = Key("claims", tag, "global") }); n != 1 {
		t.Errorf("Key: %v allocations, want 1", n)
	}
}

func TestFailurePolicyString(t *testing.T) {
	for p, want := range map[FailurePolicy]string{FailOpen: "open", FailClosed: "closed", FailLocal: "local", 9: "FailurePolicy(9)"} {
		if p.String() != want {
			t.Errorf("%d: %q, want %q", p, p.String(), want)
		}
	}
}
