package rls

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// slot is what one descriptor of a request asks for.
type slot struct {
	// rule is the configured rule the descriptor matches, one made of its
	// own limit override, or noRule.
	rule     *rule
	replaced bool
	shared   []sharedValue
	req      int // index in the store requests; -1 when the store is not asked
}

// noRule is the rule of a descriptor no rule matches: no limit.
var noRule = &rule{}

// outcome is what a descriptor's decision says.
type outcome struct {
	status *pb.RateLimitResponse_DescriptorStatus
	over   bool          // over its limit (in shadow_mode too; the status then says OK)
	retry  time.Duration // when over: the wait before the same request would pass
	// item reports whether the descriptor has a RateLimit item, made from
	// decided.
	item    bool
	decided limiter.Decision
}

// ShouldRateLimit decides a request's descriptors: each against its own
// limit, independently, as envoyproxy/ratelimit does. The answer is
// OVER_LIMIT when a descriptor not in shadow_mode is over its limit (for
// quota_mode descriptors: when all of them are).
func (s *Server) ShouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	start := time.Now()
	defer func() { s.metrics.duration.Observe(time.Since(start).Seconds()) }()
	root := s.rules.Load().domains[req.GetDomain()]
	policy := s.opts.Decide != nil && req.GetDomain() == s.opts.PolicyDomain && root == nil
	var dom *domainStats
	switch {
	case policy:
		dom = s.policyStats
	case root == nil:
		dom = s.metrics.unknown
	default:
		dom = root.stats
	}
	if err := s.check(req); err != nil {
		dom.failed.Inc()
		return nil, err
	}
	if policy {
		return s.decidePolicy(ctx, req, dom)
	}
	slots, reqs := s.plan(root, req, dom)
	var results []store.Result
	var err error
	if len(reqs) > 0 {
		dctx, cancel := s.bound(ctx)
		results, err = s.opts.Store.DecideEach(dctx, nil, reqs, s.opts.Clock.Now())
		cancel()
		if err == nil && len(results) != len(reqs) {
			err = errors.New("rls: store returned too few results")
		}
	}
	resp := s.answer(slots, results, err, dom)
	if resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT {
		dom.over.Inc()
	} else {
		dom.ok.Inc()
	}
	return resp, nil
}

// bound returns ctx bounded by Options.Timeout and what releases it. A
// deadline of the caller's that comes first (Envoy's filter sends one,
// 20ms by default) bounds it already, as does a store whose own bound is
// shorter (storeBounded): then ctx is used as it is, which spares a
// context and a timer per call.
func (s *Server) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.storeBounded {
		return ctx, func() {}
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= s.opts.Timeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.opts.Timeout)
}

// check refuses a request envoyproxy/ratelimit refuses, and one too large
// to decide, with InvalidArgument saying what was wrong.
func (s *Server) check(req *pb.RateLimitRequest) error {
	switch n := len(req.GetDescriptors()); {
	case req.GetDomain() == "":
		return status.Error(codes.InvalidArgument, "rls: domain is empty (want the domain of Envoy's rate_limit filter, as in the rule files)")
	case n == 0:
		return status.Error(codes.InvalidArgument, "rls: no descriptors (want at least one, as Envoy's rate_limits actions make)")
	case n > s.opts.MaxDescriptors:
		return status.Errorf(codes.InvalidArgument, "rls: %d descriptors in one request (at most %d)", n, s.opts.MaxDescriptors)
	}
	for i, d := range req.GetDescriptors() {
		if o := d.GetLimit(); o != nil {
			if _, ok := overridePeriod(o); !ok {
				return status.Errorf(codes.InvalidArgument, "rls: descriptors[%d].limit: unit %v with unit_multiplier %d is not a period sluice can count (want SECOND to YEAR, at most 366 days in all)",
					i, o.GetUnit(), o.GetUnitMultiplier().GetValue())
			}
		}
	}
	return nil
}

// plan finds each descriptor's limit under its domain's root (nil for an
// unknown domain) and the store requests to make.
func (s *Server) plan(root *node, req *pb.RateLimitRequest, dom *domainStats) ([]slot, []store.Request) {
	descs := req.GetDescriptors()
	slots := make([]slot, len(descs))
	if root == nil { // an unknown domain limits nothing, overrides included
		for i := range slots {
			slots[i] = slot{rule: noRule, req: -1}
		}
		return slots, nil
	}
	var replacing map[string]bool
	var room [8]entry
	for i, d := range descs {
		views := room[:0]
		for _, e := range d.GetEntries() {
			views = append(views, entry{e.GetKey(), e.GetValue()})
		}
		sl := &slots[i]
		*sl = slot{rule: noRule, req: -1}
		if o := d.GetLimit(); o != nil {
			sl.rule = overrideRule(o, dom)
			continue
		}
		r, shared := root.lookup(views)
		if r == nil {
			continue
		}
		sl.rule, sl.shared = r, shared
		for _, name := range r.replaces {
			if replacing == nil {
				replacing = map[string]bool{}
			}
			replacing[name] = true
		}
	}
	var reqs []store.Request
	for i, d := range descs {
		sl := &slots[i]
		r := sl.rule
		sl.replaced = r.name != "" && replacing[r.name]
		if r.current == nil || r.unlimited || sl.replaced || r.current.RequestsPerUnit == 0 {
			continue
		}
		sl.req = len(reqs)
		reqs = append(reqs, store.Request{Key: key(root.prefix, d, sl.shared), Limit: r.limit, Cost: cost(req, d)})
	}
	return slots, reqs
}

// overrideRule is the rule of a descriptor's own limit (checked).
func overrideRule(o *rlv3.RateLimitDescriptor_RateLimitOverride, dom *domainStats) *rule {
	p, _ := overridePeriod(o)
	r := &rule{stats: dom.override, label: overrideLabel, period: p,
		current: &pb.RateLimitResponse_RateLimit{RequestsPerUnit: o.GetRequestsPerUnit(),
			Unit: pb.RateLimitResponse_RateLimit_Unit(o.GetUnit()), UnitMultiplier: o.GetUnitMultiplier()}}
	if o.GetRequestsPerUnit() == 0 {
		return r
	}
	l, err := limiter.New(limiter.FixedWindow, min(int64(o.GetRequestsPerUnit()), limiter.MaxRate), p, 0)
	if err == nil {
		r.limit = l
	}
	return r
}

// overridePeriod is the period of a descriptor's limit override.
func overridePeriod(o *rlv3.RateLimitDescriptor_RateLimitOverride) (time.Duration, bool) {
	var unit time.Duration
	switch o.GetUnit() {
	case typev3.RateLimitUnit_SECOND:
		unit = time.Second
	case typev3.RateLimitUnit_MINUTE:
		unit = time.Minute
	case typev3.RateLimitUnit_HOUR:
		unit = time.Hour
	case typev3.RateLimitUnit_DAY:
		unit = 24 * time.Hour
	case typev3.RateLimitUnit_MONTH:
		unit = 30 * 24 * time.Hour
	case typev3.RateLimitUnit_YEAR:
		unit = 365 * 24 * time.Hour
	default:
		return 0, false
	}
	m := int64(1)
	if um := o.GetUnitMultiplier(); um != nil {
		m = int64(um.GetValue())
	}
	if m < 1 || m > int64(limiter.MaxPeriod/unit) {
		return 0, false
	}
	return time.Duration(m) * unit, true
}

// cost is a descriptor's hits: its own hits_addend if set (0 is a look),
// else the request's, where 0 means 1. A descriptor with is_negative_hits
// is a look: sluice gives nothing back.
func cost(req *pb.RateLimitRequest, d *rlv3.RateLimitDescriptor) int64 {
	if d.GetIsNegativeHits() {
		return 0
	}
	if h := d.GetHitsAddend(); h != nil {
		return int64(min(h.GetValue(), math.MaxInt64))
	}
	return int64(max(req.GetHitsAddend(), 1))
}

// key is a descriptor's store key: prefix ("rls:" and the domain, which
// no gateway rule's name can be), then per entry its key, a mark and its
// value ("=" and the value; "#" and a long value's hash; "*" and a
// share_threshold entry's wildcard), each length-prefixed by store.Key so
// that no two different descriptors share one. A key longer than
// maxStoreKey (a descriptor with its own limit matches no rule, so its
// entries are a caller's, any number of them) is the prefix, "#" and the
// hash of that key: two parts, which no descriptor's entries make.
func key(prefix string, d *rlv3.RateLimitDescriptor, shared []sharedValue) store.Key {
	entries := d.GetEntries()
	var room [12]string
	parts := room[:0]
	for _, e := range entries {
		mark, v := keyPart(e.GetValue())
		parts = append(parts, e.GetKey(), mark, v)
	}
	for _, sv := range shared {
		parts[3*sv.index+1], parts[3*sv.index+2] = "*", sv.value
	}
	k := store.NewKey(prefix, parts...)
	if k.Len() > maxStoreKey {
		sum := sha256.Sum256(k.Append(nil))
		return store.NewKey(prefix, "#", hex.EncodeToString(sum[:]))
	}
	return k
}

// answer turns the store's results into the response.
func (s *Server) answer(slots []slot, results []store.Result, err error, dom *domainStats) *pb.RateLimitResponse {
	resp := &pb.RateLimitResponse{Statuses: make([]*pb.RateLimitResponse_DescriptorStatus, len(slots))}
	var h headerSet
	failed, quotaFailed, quotaTotal := 0, 0, 0
	for i := range slots {
		sl := &slots[i]
		o := s.outcome(sl, results, err, dom)
		resp.Statuses[i] = o.status
		if sl.rule.quota {
			quotaTotal++
		}
		if o.over && !sl.rule.shadow {
			if sl.rule.quota {
				quotaFailed++
			} else {
				failed++
			}
			h.deny(o.retry)
		}
		if o.item && !sl.rule.shadow {
			h.add(sl.rule, o.decided)
		}
	}
	over := failed > 0 || quotaTotal > 0 && quotaFailed == quotaTotal
	if over {
		resp.OverallCode = pb.RateLimitResponse_OVER_LIMIT
	} else {
		resp.OverallCode = pb.RateLimitResponse_OK
	}
	resp.ResponseHeadersToAdd = h.headers(over)
	return resp
}

// outcome is one descriptor's answer.
func (s *Server) outcome(sl *slot, results []store.Result, err error, dom *domainStats) outcome {
	r := sl.rule
	switch {
	case sl.replaced:
		r.stats.replaced.Inc()
		return outcome{status: &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK}}
	case r.unlimited:
		r.stats.unlimited.Inc()
		return outcome{status: &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK, LimitRemaining: math.MaxUint32}}
	case r.current == nil:
		dom.unmatched.Inc()
		return outcome{status: &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK}}
	case sl.req < 0: // requests_per_unit 0: every request is over, and no wait helps
		left := windowLeft(s.opts.Clock.Now(), r.period)
		o := s.over(r, limiter.Decision{RetryAfter: limiter.Never, Refill: left, Reset: left})
		o.status.DurationUntilReset = seconds(left) // the window's end, as envoyproxy/ratelimit says
		return o
	}
	if err == nil {
		err = results[sl.req].Err
	}
	if err != nil {
		return s.failedOutcome(r, err, dom)
	}
	d := results[sl.req].Decision
	if !d.Allowed {
		if d.RetryAfter == limiter.Never && d.Refill == 0 {
			// No wait cures it, and the count is at its full limit: its
			// t, as its duration_until_reset, is when the limit resets
			// (for a fixed window, its end), not 0.
			d.Refill = s.reset(r, d)
		}
		o := s.over(r, d)
		if d.RetryAfter == limiter.Never { // no wait cures it: say when the limit resets
			o.status.DurationUntilReset = seconds(s.reset(r, d))
		}
		return o
	}
	r.stats.ok.Inc()
	st := &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK, CurrentLimit: r.current,
		LimitRemaining: clampUint32(d.Remaining), DurationUntilReset: seconds(s.reset(r, d))}
	return outcome{status: st, item: true, decided: d}
}

// failedOutcome is the answer for a descriptor the store did not decide
// (err, not nil). Apart from outcome, whose errors.As target would
// otherwise be allocated on every call.
func (s *Server) failedOutcome(r *rule, err error, dom *domainStats) outcome {
	switch refuse, unavailable := s.opts.OnStoreError.Refused(err); {
	case unavailable != nil:
		return s.over(r, refused(r, unavailable.RetryAfter))
	case refuse:
		dom.storeErrors.Inc()
		return s.over(r, refused(r, storeErrorRetry))
	default: // as on_failure: open: the request passes, uncounted
		dom.storeErrors.Inc()
		return outcome{status: &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK, CurrentLimit: r.current}}
	}
}

// storeErrorRetry is the Retry-After of a refusal for a store error, as
// the failover store's on_failure: closed answers by default.
const storeErrorRetry = time.Second

// reset is the time until d's key is back at its full limit; for a
// fixed window never used, the end of the current window, as
// envoyproxy/ratelimit says.
func (s *Server) reset(r *rule, d limiter.Decision) time.Duration {
	if d.Reset == 0 && r.limit.Algorithm() == limiter.FixedWindow {
		return windowLeft(s.opts.Clock.Now(), r.period)
	}
	return d.Reset
}

// refused is the decision of a store that refuses while it cannot decide:
// nothing left, the same request in retry.
func refused(r *rule, retry time.Duration) limiter.Decision {
	return limiter.Decision{Limit: r.limit.Burst(), RetryAfter: retry, Refill: retry}
}

// over is the outcome of a descriptor over its rule's limit, denied by
// d: OVER_LIMIT, or OK in shadow_mode.
func (s *Server) over(r *rule, d limiter.Decision) outcome {
	code := pb.RateLimitResponse_OVER_LIMIT
	if r.shadow {
		code = pb.RateLimitResponse_OK
		r.stats.shadow.Inc()
	} else {
		r.stats.over.Inc()
	}
	st := &pb.RateLimitResponse_DescriptorStatus{Code: code, CurrentLimit: r.current, LimitRemaining: clampUint32(d.Remaining)}
	if d.RetryAfter != limiter.Never {
		st.DurationUntilReset = seconds(d.RetryAfter)
	}
	return outcome{status: st, over: true, retry: d.RetryAfter, item: true, decided: d}
}

// windowLeft is the time from now to the end of the epoch-aligned window
// of period holding now, as envoyproxy/ratelimit counts its windows.
func windowLeft(now time.Time, period time.Duration) time.Duration {
	if period <= 0 {
		return 0
	}
	us := now.UnixMicro()
	p := period.Microseconds()
	return time.Duration(p-us%p) * time.Microsecond
}

// seconds is d rounded up to whole seconds, as envoyproxy/ratelimit
// counts.
func seconds(d time.Duration) *durationpb.Duration {
	return &durationpb.Duration{Seconds: ceilSeconds(d)}
}

func clampUint32(n int64) uint32 { return uint32(min(max(n, 0), math.MaxUint32)) }
