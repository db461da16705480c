// Package rlscompat makes the questions that compare sluice's Envoy rate
// limit service with envoyproxy/ratelimit: the command rls/compat asks both
// servers, and rls's TestCompatTables replays them against the answers
// envoyproxy/ratelimit gave (rls/testdata/compat).
package rlscompat

import (
	"fmt"
	"strconv"
	"strings"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/sluice-rl/sluice/config"
)

// Question is one request, asked calls times in a row.
type Question struct {
	Name  string
	Req   *pb.RateLimitRequest
	Calls int
}

// Brief writes an answer on one line: the overall code, then per
// descriptor its code and, with a current limit, limit_remaining and
// duration_until_reset ("OK OK/4/60s"); "/unlimited" for an unlimited one.
func Brief(resp *pb.RateLimitResponse) string {
	var b strings.Builder
	b.WriteString(resp.GetOverallCode().String())
	for _, st := range resp.GetStatuses() {
		b.WriteString(" " + st.GetCode().String())
		if st.GetCurrentLimit() == nil {
			if st.GetLimitRemaining() != 0 {
				b.WriteString("/unlimited")
			}
			continue
		}
		fmt.Fprintf(&b, "/%d/%ds", st.GetLimitRemaining(), st.GetDurationUntilReset().GetSeconds())
	}
	return b.String()
}

// Alike compares two answers Brief wrote, allowing a second's difference in each
// duration (the two servers are asked one after the other), or any
// difference in durations when exact is false.
func Alike(a, b string, exact bool) bool {
	fa, fb := strings.Fields(a), strings.Fields(b)
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		if fa[i] == fb[i] {
			continue
		}
		pa, pb := strings.Split(fa[i], "/"), strings.Split(fb[i], "/")
		if len(pa) != 3 || len(pb) != 3 || pa[0] != pb[0] || pa[1] != pb[1] {
			return false
		}
		da, _ := strconv.Atoi(strings.TrimSuffix(pa[2], "s"))
		db, _ := strconv.Atoi(strings.TrimSuffix(pb[2], "s"))
		if exact && (da-db > 1 || db-da > 1) {
			return false
		}
	}
	return true
}

// Questions makes the questions of a rule file, always the same ones in
// the same order (see the command rls/compat).
func Questions(dom *config.EnvoyDomain) []Question {
	var qs []Question
	var limited []*rlv3.RateLimitDescriptor
	var keyOnly *rlv3.RateLimitDescriptor // a fresh value under the first limited key-only rule
	var walk func(prefix []*rlv3.RateLimitDescriptor_Entry, descs []config.EnvoyDescriptor)
	walk = func(prefix []*rlv3.RateLimitDescriptor_Entry, descs []config.EnvoyDescriptor) {
		for _, d := range descs {
			v := strings.ReplaceAll(d.Value, "*", "x")
			if v == "" {
				v = "v1"
			}
			entries := append(append([]*rlv3.RateLimitDescriptor_Entry(nil), prefix...), &rlv3.RateLimitDescriptor_Entry{Key: d.Key, Value: v})
			if rl := d.RateLimit; rl != nil {
				calls := 2
				if !rl.Unlimited {
					calls = int(min(rl.RequestsPerUnit, 4)) + 1
				}
				desc := &rlv3.RateLimitDescriptor{Entries: entries}
				qs = append(qs, Question{Name: name(entries), Req: req(dom.Domain, desc), Calls: calls})
				limited = append(limited, desc)
				if d.Value == "" && !rl.Unlimited && rl.RequestsPerUnit > 0 && keyOnly == nil {
					fresh := append(entries[:len(entries)-1:len(entries)-1], &rlv3.RateLimitDescriptor_Entry{Key: d.Key, Value: "fresh"})
					keyOnly = &rlv3.RateLimitDescriptor{Entries: fresh}
				}
				if len(d.Descriptors) == 0 {
					deeper := &rlv3.RateLimitDescriptor{Entries: append(entries[:len(entries):len(entries)], &rlv3.RateLimitDescriptor_Entry{Key: "deeper", Value: "1"})}
					qs = append(qs, Question{Name: name(deeper.Entries), Req: req(dom.Domain, deeper), Calls: 1})
				}
			}
			walk(entries, d.Descriptors)
		}
	}
	walk(nil, dom.Descriptors)
	none := &rlv3.RateLimitDescriptor{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "no_rule", Value: "1"}}}
	qs = append(qs, Question{Name: "no_rule=1", Req: req(dom.Domain, none), Calls: 1},
		Question{Name: "unknown domain", Req: req("compat-unknown-domain", none), Calls: 1})
	if len(limited) >= 2 {
		qs = append(qs, Question{Name: "both: " + name(limited[0].Entries) + " + " + name(limited[1].Entries),
			Req: req(dom.Domain, limited[0], limited[1]), Calls: 2})
	}
	return append(qs, extras(dom.Domain, keyOnly)...)
}

// extras are the questions where the two are known to differ or may:
// a descriptor's own limit, hits_addend above the limit then 1, and last
// (it may stop a server) an override whose unit is UNKNOWN.
func extras(domain string, keyOnly *rlv3.RateLimitDescriptor) []Question {
	fresh := &rlv3.RateLimitDescriptor{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "no_rule", Value: "override"}},
		Limit: &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2, Unit: typev3.RateLimitUnit_HOUR}}
	qs := []Question{{Name: "no_rule=override with limit 2/HOUR", Req: req(domain, fresh), Calls: 3}}
	if keyOnly != nil {
		big := req(domain, keyOnly)
		big.HitsAddend = 1000
		n := name(keyOnly.Entries)
		qs = append(qs, Question{Name: n + " hits_addend 1000", Req: big, Calls: 1},
			Question{Name: n + " hits_addend 1 after it", Req: req(domain, keyOnly), Calls: 1})
	}
	unknown := &rlv3.RateLimitDescriptor{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "no_rule", Value: "unknown-unit"}},
		Limit: &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1}}
	return append(qs, Question{Name: "override with unit UNKNOWN (last)", Req: req(domain, unknown), Calls: 1})
}

func req(domain string, descs ...*rlv3.RateLimitDescriptor) *pb.RateLimitRequest {
	return &pb.RateLimitRequest{Domain: domain, Descriptors: descs}
}

func name(entries []*rlv3.RateLimitDescriptor_Entry) string {
	parts := make([]string, len(entries))
	for i, e := range entries {
		parts[i] = e.GetKey() + "=" + e.GetValue()
	}
	return strings.Join(parts, ",")
}
