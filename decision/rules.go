package decision

import (
	"net/netip"

	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// requests builds one store request per matching rule that does not exempt
// the caller; exempt rules are reported at once, and so is a shadow rule
// that would refuse the request for a missing header (shadow_limited,
// nothing counted). Concurrency rules go to v.leaseIndex, decided later.
// A rule's limit is the caller's, or an address override's
// (policy.Compiled.LimitAt); its key is the same either way.
func (v *Verdict) requests(pol *policy.Compiled, caller *policy.Caller, addr netip.Addr) {
	v.reqs, v.index, v.leaseIndex, v.leaseKeys = v.reqs[:0], v.index[:0], v.leaseIndex[:0], v.leaseKeys[:0]
	ip := ipGroup{pol: pol, addr: addr, keys: v.e.keysFor(pol)}
	for _, i := range v.match {
		rule := pol.Rule(i)
		if rule.Classifies() {
			continue // counts nothing: its priority and degrade are read by admit
		}
		if pol.Exempt(i, caller.ID, addr) {
			v.Report.Rules = append(v.Report.Rules, RuleResult{Rule: rule.Name, Index: i, Outcome: Exempt})
			continue
		}
		if rule.Mode == policy.Shadow && rule.Key.Kind == policy.KeyHeader && rule.Key.Missing == policy.MissingReject {
			if _, missing := headerValue(pol, i, v); missing {
				v.Report.Rules = append(v.Report.Rules, RuleResult{Rule: rule.Name, Index: i, Outcome: ShadowLimited})
				continue
			}
		}
		if rule.LimitsInFlight() {
			v.leaseIndex, v.leaseKeys = append(v.leaseIndex, i), append(v.leaseKeys, stateKey(pol, caller, i, &ip, v))
			continue
		}
		limit := caller.Limit(i)
		if pol.HasAddrOverrides() {
			limit, _ = pol.LimitAt(caller, i, addr)
		}
		v.reqs = append(v.reqs, store.Request{Key: stateKey(pol, caller, i, &ip, v), Limit: limit, Cost: rule.Cost,
			Shadow: rule.Mode != policy.Enforce})
		v.index = append(v.index, i)
	}
}
