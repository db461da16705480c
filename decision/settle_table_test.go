package decision_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// The settle tables: a rule whose cost is settled once the answer is
// known (count: failures or successes, cost_header) is refunded or
// charged the difference, and what cannot be read is told to OnSettle.
// httplimit/settle_test.go checks the same through net/http.

func loginRule(count policy.Count) policy.Rule {
	return policy.Rule{Name: "login-failures", Match: policy.Match{Path: "/login", Methods: []string{"POST"}},
		Key: policy.KeySpec{Kind: policy.KeyIP}, Rate: rate(5, 15*time.Minute), Count: count}
}

var login = call{method: "POST", path: "/login"}

func status(code int) *decision.Response { return &decision.Response{Passed: true, Status: code} }

// TestCountTable: count: failures refunds successes whole, count:
// successes refunds failures; either way the sixth counted answer is
// refused.
func TestCountTable(t *testing.T) {
	for _, tc := range []struct {
		count             policy.Count
		refunded, counted int
	}{
		{policy.CountFailures, 200, 401},
		{policy.CountSuccesses, 500, 204},
	} {
		t.Run(tc.count.String(), func(t *testing.T) {
			r := newRig(t, policy.Policy{Rules: []policy.Rule{loginRule(tc.count)}})
			for range 20 {
				want(t, r.answered(login, status(tc.refunded)), 0, "refunded")
			}
			for range 5 {
				want(t, r.answered(login, status(tc.counted)), 0, "counted")
			}
			want(t, r.answered(login, status(tc.refunded)), 429, "after 5 counted")
			if n, err := r.settleErrors(); n != 0 {
				t.Errorf("OnSettle told %d errors (%v), want none", n, err)
			}
		})
	}
}

// TestCostHeaderTable: the reservation (cost 10) is replaced by the
// answer's X-Cost; a value that is missing, negative, not a number or
// given twice leaves the reservation and is told to OnSettle as a
// *CostError; an answer not counted (500 under count: successes) is
// refunded whatever it says.
func TestCostHeaderTable(t *testing.T) {
	r := newRig(t, policy.Policy{Rules: []policy.Rule{{Name: "tokens", Key: policy.KeySpec{Kind: policy.KeyGlobal},
		Algorithm: limiter.TokenBucket, Rate: rate(100, time.Hour), Cost: 10, CostHeader: "X-Cost", Count: policy.CountSuccesses}}})
	steps := []struct {
		cost      []string
		status    int
		remaining int64 // as decided, before the settle
		bad       bool
	}{
		{[]string{"3"}, 200, 90, false},     // 100-10; 7 back: 97
		{[]string{"25"}, 200, 87, false},    // 97-10 = 87, then 15 more: 72
		{nil, 200, 62, true},                // no header: 10 stand, 62
		{[]string{"-4"}, 200, 52, true},     // 52
		{[]string{"lots"}, 200, 42, true},   // 42
		{[]string{"1", "2"}, 200, 32, true}, // 32
		{[]string{"0"}, 200, 22, false},     // 22, then all 10 back: 32
		{[]string{"50"}, 500, 22, false},    // not counted: 10 back, 32
		{[]string{"10"}, 200, 22, false},    // as reserved: 22
		{[]string{"0"}, 201, 12, false},     // 12, all back: 22
	}
	for i, st := range steps {
		before, _ := r.settleErrors()
		resp := status(st.status)
		if st.cost != nil {
			resp.Header = hdr{"X-Cost": st.cost}
		}
		s := r.answered(call{}, resp)
		want(t, s, 0, "a request")
		if got := remaining(t, s, "tokens"); got != st.remaining {
			t.Errorf("step %d (%q): remaining %d, want %d", i, st.cost, got, st.remaining)
		}
		after, err := r.settleErrors()
		var ce *decision.CostError
		if reported := after > before; reported != st.bad {
			t.Errorf("step %d (%q): reported %v (%v), want %v", i, st.cost, reported, err, st.bad)
		} else if reported && (!errors.As(err, &ce) || ce.Rule != "tokens" || ce.Header != "X-Cost") {
			t.Errorf("step %d: reported %v, want a *CostError of tokens, X-Cost", i, err)
		}
	}
}

// TestRefusedIsRefundedTable: a request another rule refused never
// reached the service: a shadow rule counting failures, which spent on
// it, is refunded whole, not charged a failure for sluice's own 429.
// (On the memory store: a store that is no store.Settler refunds
// nothing.)
func TestRefusedIsRefundedTable(t *testing.T) {
	strict := policy.Rule{Name: "strict", Key: policy.KeySpec{Kind: policy.KeyIP}, Algorithm: limiter.FixedWindow, Rate: rate(1, time.Minute)}
	watch := loginRule(policy.CountFailures)
	watch.Name, watch.Match, watch.Mode, watch.Rate = "watch", policy.Match{}, policy.Shadow, rate(2, time.Minute)
	r := newRig(t, policy.Policy{Rules: []policy.Rule{strict, watch}})
	want(t, r.answered(login, status(200)), 0, "first")
	for i := range 3 {
		s := r.answered(login, status(200))
		want(t, s, 429, "over strict")
		if w := s.rule(t, "watch"); w.Outcome != decision.Allowed || w.Decision.Remaining != 1 {
			t.Errorf("refusal %d: watch %+v, want allowed with 1 left (2 less this request's reservation)", i, w)
		}
	}
}

// TestUnansweredKeepsItsReservationTable: a request passed on that has
// no answer (its caller left, or the transport broke off, before any
// status) is no success to refund under count: failures, nor a failure
// to refund under count: successes: its reservation stands.
func TestUnansweredKeepsItsReservationTable(t *testing.T) {
	for _, count := range []policy.Count{policy.CountFailures, policy.CountSuccesses} {
		t.Run(count.String(), func(t *testing.T) {
			r := newRig(t, policy.Policy{Rules: []policy.Rule{loginRule(count)}})
			for range 5 {
				want(t, r.answered(login, &decision.Response{Passed: true, Aborted: true, Unanswered: true}), 0, "unanswered")
			}
			want(t, r.answered(login, status(401)), 429, "after 5 unanswered")
		})
	}
}
