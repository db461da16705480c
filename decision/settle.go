package decision

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// Settling: a rule that counts only failures or successes, or reads its
// cost from a response header (policy.Rule.Settles), reserves its cost
// when the request is decided, like any rule, and settles it after the
// response (store.Settler): a request that does not count is refunded
// whole, and a reported cost replaces the reservation. A request the
// Engine refused (another rule refused it) never reached the
// handler: it is refunded whole. One passed on that has no answer (its
// caller left, or the handler panicked, before a status was written) keeps
// its reservation: the service may have done the work. A store that is
// not a store.Settler keeps every reservation as it was decided.

// settleItem is one rule's reservation, to settle after the response.
type settleItem struct {
	rule     *policy.Rule
	costName string // rule's CostHeader in canonical form (policy.Compiled.CostHeaderName)
	key      store.Key
	limit    limiter.Limit
	cost     int64
	res      limiter.Reservation
	held     bool // its Decision had a Delay: a caller that leaves while held cancels it (cancelHeld)
}

// settleStep is the after step that settles a request's reservations. It
// lives in the request's Verdict.
type settleStep struct{ items []settleItem }

// CostError is why a rule's cost_header could not be read from a response:
// the reservation then stands as it was decided (Options.OnSettle).
type CostError struct {
	Rule   string
	Header string
	Value  string // "" when the header was missing
}

func (e *CostError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("rule %s: response has no %s header: the reserved cost stands", e.Rule, e.Header)
	}
	return fmt.Sprintf("rule %s: response header %s: %q is not a cost (a whole number, 0 or more): the reserved cost stands", e.Rule, e.Header, clipValue(e.Value))
}

func clipValue(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

// reserve notes, for the after step, every reservation of a settling rule
// that the store decided and spent; results and spent are decideAll's.
func (v *Verdict) reserve(pol *policy.Compiled, results []store.Result, spent bool) {
	v.settle.items = v.settle.items[:0]
	if !spent || !pol.Settles() {
		return
	}
	for k, res := range results {
		rule := pol.Rule(v.index[k])
		if res.Err != nil || !res.Decision.Allowed || v.reqs[k].Cost <= 0 || !rule.Settles() {
			continue
		}
		v.settle.items = append(v.settle.items, settleItem{rule: rule, costName: pol.CostHeaderName(v.index[k]), key: v.reqs[k].Key, limit: v.reqs[k].Limit, cost: v.reqs[k].Cost,
			res: res.Decision.Reservation, held: res.Decision.Delay > 0})
	}
	if len(v.settle.items) > 0 {
		v.after = append(v.after, &v.settle)
	}
}

// after settles each reservation at the cost the response says.
func (st *settleStep) after(v *Verdict, resp *Response) {
	e := v.e
	settler, ok := e.opts.Store.(store.Settler)
	if !ok {
		return
	}
	now := e.opts.Clock.Now()
	// The caller may have gone: the settling is still owed.
	ctx := context.WithoutCancel(v.ctx)
	for _, it := range st.items {
		actual, err := actualCost(&it, resp)
		if err == nil && actual != it.cost {
			_, err = settler.Settle(ctx, it.key, it.limit, now, it.res, it.cost, actual)
		}
		if err != nil && e.opts.OnSettle != nil {
			e.opts.OnSettle(&v.req, it.rule.Name, err)
		}
	}
	clear(st.items) // no key or rule outlives its request
	st.items = st.items[:0]
}

// actualCost is what a request's reservation it (it.cost) costs under
// it.rule, given its response. A bad cost_header value is an error (*CostError), and
// the reservation stands.
func actualCost(it *settleItem, resp *Response) (int64, error) {
	rule, reserved := it.rule, it.cost
	switch {
	case !resp.Passed:
		return 0, nil // refused: the service never saw it
	case resp.Unanswered:
		return reserved, nil // the caller left or the transport broke off: the service may have done the work
	case !rule.Count.Counts(resp.Status):
		return 0, nil
	case rule.CostHeader == "":
		return reserved, nil
	}
	var room [2]string
	values := resp.Header.Values(room[:0], it.costName) // Finish gives the steps a Header, never nil
	if len(values) == 0 && resp.Failure != NoFailure {
		return reserved, nil // no answer from the service: nothing to read, nothing to report
	}
	if len(values) != 1 {
		return reserved, &CostError{Rule: rule.Name, Header: rule.CostHeader, Value: strings.Join(values, ", ")}
	}
	n, err := strconv.ParseInt(values[0], 10, 64)
	if err != nil || n < 0 {
		return reserved, &CostError{Rule: rule.Name, Header: rule.CostHeader, Value: values[0]}
	}
	return n, nil
}
