package store

import (
	"testing"
	"unsafe"
)

func TestKeyIsUnambiguous(t *testing.T) {
	cases := [][]string{
		{"a_b", "c"}, {"a", "b_c"}, {"a:b", "c"}, {"a", "b:c"}, {"1:a", ""}, {"", "1:a"},
		{"ab"}, {"a", "b"}, {"a", "", "b"}, {"a", "b", ""},
	}
	seen := map[string][]string{}
	for _, c := range cases {
		k := NewKey(c[0], c[1:]...).String()
		if prev, ok := seen[k]; ok {
			t.Fatalf("NewKey(%q) == NewKey(%q) == %q", c, prev, k)
		}
		seen[k] = c
	}
}

// TestKeyEncoding: the encoding is the one the stores have always
// written, so that the Redis keys of a running version stay readable.
func TestKeyEncoding(t *testing.T) {
	for _, c := range []struct {
		k    Key
		want string
	}{
		{NewKey("claims", "tag", "global"), "6:claims3:tag6:global"},
		{NewKey("claims"), "6:claims"},
		{GroupKey(Parts("client", "partner-a"), "claims", "gcra"), "@19:6:client9:partner-a6:claims4:gcra"},
		{RawKey("rls:x"), "rls:x"},
		{NewKey("a", string(make([]byte, 12))), "1:a12:" + string(make([]byte, 12))},
		{GroupKey("g", "r"), "@1:g1:r"},
	} {
		if got := c.k.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.k, got, c.want)
		}
		if got := string(c.k.Append([]byte("x"))); got != "x"+c.want {
			t.Errorf("%+v.Append = %q, want %q", c.k, got, "x"+c.want)
		}
		if c.k.Len() != len(c.want) {
			t.Errorf("%+v.Len() = %d, want %d", c.k, c.k.Len(), len(c.want))
		}
	}
	if u := GroupKey("g", "claims", "x").Ungrouped(); u != NewKey("claims", "x").String() {
		t.Errorf("Ungrouped = %q", u)
	}
}

func FuzzKeyIsUnambiguous(f *testing.F) {
	f.Add("6:client9:partner-a", "claims", "x", "6:client9:partner-a", "claims", "x")
	f.Add("a", "b", "c", "a:1", "b", "c")
	f.Add("", "1:a", "", "1:a", "", "")
	f.Add("", "a_b", "c", "", "a", "b_c")
	f.Fuzz(func(t *testing.T, g1, r1, p1, g2, r2, p2 string) {
		k1, k2 := GroupKey(g1, r1, p1), GroupKey(g2, r2, p2)
		if (g1 == g2 && r1 == r2 && p1 == p2) != (k1.String() == k2.String()) {
			t.Fatalf("GroupKey(%q,%q,%q)=%q GroupKey(%q,%q,%q)=%q", g1, r1, p1, k1, g2, r2, p2, k2)
		}
		if g1 != "" && k1.String() == NewKey(r2, p2).String() {
			t.Fatalf("GroupKey(%q,%q,%q) == NewKey(%q,%q) == %q", g1, r1, p1, r2, p2, k1)
		}
		if k1.Len() != len(k1.String()) || string(k1.Append(nil)) != k1.String() {
			t.Fatalf("%+v: Len %d, Append %q, String %q", k1, k1.Len(), k1.Append(nil), k1.String())
		}
	})
}

// TestKeysAllocateOnce: keys are built per request, each in one allocation.
func TestKeysAllocateOnce(t *testing.T) {
	group, tag := Parts("client", "partner-a"), "gcra" // a rule's algorithm, as decision tags keys
	if n := testing.AllocsPerRun(100, func() { _ = GroupKey(group, "claims", tag) }); n != 1 {
		t.Errorf("GroupKey: %v allocations, want 1", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = NewKey("claims", tag, "global") }); n != 1 {
		t.Errorf("NewKey: %v allocations, want 1", n)
	}
	k := GroupKey(group, "claims", tag)
	var buf [64]byte
	if n := testing.AllocsPerRun(100, func() { _ = k.Append(buf[:0]) }); n != 0 {
		t.Errorf("Append: %v allocations, want 0", n)
	}
}

func TestFailurePolicyString(t *testing.T) {
	for p, want := range map[FailurePolicy]string{FailOpen: "open", FailClosed: "closed", FailLocal: "local", 9: "FailurePolicy(9)"} {
		if p.String() != want {
			t.Errorf("%d: %q, want %q", p, p.String(), want)
		}
	}
}

func FuzzWireRoundTrip(f *testing.F) {
	f.Add("6:client1:a", "claims", "4:gcra", true, "1:x")
	f.Add("", "", "raw", false, "")
	f.Fuzz(func(t *testing.T, g, r, rest string, listed bool, junk string) {
		k := build(g, r, nil, rest)
		if g == "" && r == "" {
			k = RawKey(rest)
		}
		if listed {
			k = k.Listed()
		}
		if got, ok := ParseWire(k.Wire()); !ok || got != k {
			t.Fatalf("ParseWire(%q) = %+v, %v; want %+v", k.Wire(), got, ok, k)
		}
		if got, ok := ParseWire(junk); ok && got.Wire() != junk {
			t.Fatalf("ParseWire(%q) = %+v, whose Wire is %q", junk, got, got.Wire())
		}
	})
}

// TestKeyParts: a key's group, rule and rest read back from its encoding.
func TestKeyParts(t *testing.T) {
	long := string(make([]byte, 1234))
	for _, c := range []struct {
		k                 Key
		group, rule, rest string
	}{
		{GroupKey(Parts("client", "partner-a"), "claims", "gcra"), Parts("client", "partner-a"), "claims", Parts("gcra")},
		{NewKey("claims", "t", "global"), "", "claims", Parts("t", "global")},
		{GroupKey(long, long, long), long, long, Parts(long)},
		{NewKey(""), "", "", ""},
		{RawKey("6:claims"), "", "", "6:claims"},
		{Key{}, "", "", ""},
	} {
		if g, r, rest := c.k.Group(), c.k.Rule(), c.k.Rest(); g != c.group || r != c.rule || rest != c.rest {
			t.Errorf("%q: group %q, rule %q, rest %q; want %q, %q, %q", c.k, g, r, rest, c.group, c.rule, c.rest)
		}
		if c.k.IsListed() || !c.k.Listed().IsListed() || c.k.Listed().String() != c.k.String() {
			t.Errorf("%q: Listed marks it, and changes nothing else", c.k)
		}
	}
	if unsafe.Sizeof(Key{}) > 32 {
		t.Errorf("a Key is %d bytes: over 32 it is copied through memory, not registers", unsafe.Sizeof(Key{}))
	}
}
