package policy

import (
	"cmp"
	"net/netip"
	"slices"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// addrOverrides are the overrides and blocks of address ranges in force.
// A lookup masks the address to each range length in use, longest first,
// and looks the range up: as many map lookups as there are lengths (at
// most 33 for IPv4, 129 for IPv6), however many ranges, and no
// allocation.
type addrOverrides struct {
	byRange      map[netip.Prefix]*addrEntry
	bits4, bits6 []int // the lengths of the ranges, longest first
}

// addrEntry is what is in force for one range.
type addrEntry struct {
	source  string          // "override:ip:RANGE"
	limits  []limiter.Limit // by rule index; the zero Limit where the range sets none
	blocked bool
	until   time.Time // of the block
}

// entry returns the entry of p, a canonical range, made if need be for a
// policy of n rules.
func (a *addrOverrides) entry(p netip.Prefix, n int) *addrEntry {
	if e := a.byRange[p]; e != nil {
		return e
	}
	if a.byRange == nil {
		a.byRange = map[netip.Prefix]*addrEntry{}
	}
	e := &addrEntry{source: OverrideSourcePrefix + AddrTargetPrefix + p.String(), limits: make([]limiter.Limit, n)}
	a.byRange[p] = e
	return e
}

// sortBits lists the lengths of the ranges in force, longest first, per
// address family.
func (a *addrOverrides) sortBits() {
	a.bits4, a.bits6 = a.bits4[:0], a.bits6[:0]
	for p := range a.byRange {
		if p.Addr().Is4() {
			a.bits4 = appendOnce(a.bits4, p.Bits())
		} else {
			a.bits6 = appendOnce(a.bits6, p.Bits())
		}
	}
	longestFirst := func(x, y int) int { return cmp.Compare(y, x) }
	slices.SortFunc(a.bits4, longestFirst)
	slices.SortFunc(a.bits6, longestFirst)
}

func appendOnce(s []int, n int) []int {
	if slices.Contains(s, n) {
		return s
	}
	return append(s, n)
}

// find returns the longest range holding addr whose entry overrides rule
// (a block, for rule -1), and that entry; nil when there is none.
func (a *addrOverrides) find(addr netip.Addr, rule int) (netip.Prefix, *addrEntry) {
	addr = addr.Unmap().WithZone("")
	bits := a.bits6
	switch {
	case !addr.IsValid():
		return netip.Prefix{}, nil
	case addr.Is4():
		bits = a.bits4
	}
	for _, n := range bits {
		p, err := addr.Prefix(n)
		if err != nil {
			continue
		}
		e := a.byRange[p]
		if e != nil && (rule < 0 && e.blocked || rule >= 0 && !e.limits[rule].IsZero()) {
			return p, e
		}
	}
	return netip.Prefix{}, nil
}
