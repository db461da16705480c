package demo

import (
	"context"
	"errors"
	"io"
	"os"
	"time"
)

// OverloadOptions tune the overload demo; the zero value is the real demo
// (38 s).
type OverloadOptions struct {
	// Baseline is how long the month-end's load is first sent straight at
	// the claims service, slowed down as at month-end, without sluice:
	// what the story would be without it. Default 4s.
	Baseline time.Duration
	// Calm, MonthEnd and After are the three phases: an ordinary day, the
	// month-end (the claims service four times as slow, reports and exports
	// surging), and the day after. Defaults 6s, 20s, 8s.
	Calm, MonthEnd, After time.Duration
	// Out receives the story and the final table. Default os.Stdout.
	Out io.Writer
	// Progress is the interval between lines of the limit over time.
	// Default 2s.
	Progress time.Duration
}

func (o OverloadOptions) withDefaults() OverloadOptions {
	if o.Baseline <= 0 {
		o.Baseline = 4 * time.Second
	}
	if o.Calm <= 0 {
		o.Calm = 6 * time.Second
	}
	if o.MonthEnd <= 0 {
		o.MonthEnd = 20 * time.Second
	}
	if o.After <= 0 {
		o.After = 8 * time.Second
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Progress <= 0 {
		o.Progress = 2 * time.Second
	}
	return o
}

// OverloadResult is what the overload demo measured.
type OverloadResult struct {
	// Elapsed is how long the callers sent; Interrupted reports that the
	// context ended first.
	Elapsed     time.Duration
	Interrupted bool
	// Classes are the kinds of request, in the order of the table.
	Classes []ClassResult
	// Ceiling is protect.max_in_flight; UpstreamMaxInFlight the most
	// requests the claims service had at once, as it counted them itself.
	Ceiling, UpstreamMaxInFlight int
	// Limits is the in-flight limit over time, as sluice's metrics gave it.
	Limits []LimitSample
	// LimitBefore is the limit at the last sample before the month-end,
	// LimitLowest the lowest from then on, LimitAfter the last one; 0
	// when no sample was taken then.
	LimitBefore, LimitLowest, LimitAfter int
	// Baseline is what became of the month-end's load sent straight at the
	// claims service, without sluice (OverloadOptions.Baseline), and
	// BaselineMaxInFlight the most requests the service had at once then.
	Baseline            []ClassResult
	BaselineMaxInFlight int
}

// ClassResult is what one kind of request became.
type ClassResult struct {
	// Name says what the requests are ("claim reads"); Priority is the
	// priority sluice's rules give them; Degrade marks a non-essential
	// feature.
	Name, Priority string
	Degrade        bool
	// Sent counts the requests sent; Passed those the claims service
	// answered 2xx; Degraded and Shed those sluice refused with 503 (a
	// switched-off feature; shed, a full queue or a wait too long);
	// Failed anything else.
	Sent, Passed, Degraded, Shed, Failed int
	// Queued counts the requests of this priority that waited in sluice's
	// queue (1 ms or more) before they were passed on, from sluice's
	// metrics; -1 when they do not say.
	Queued int
	// P50 and P99 are the latency of the 2xx answers, as the caller saw
	// it (sluice's queue included); PhaseP99 the p99 of those sent in each
	// phase (calm, month-end, after), each phase on its own.
	P50, P99 time.Duration
	PhaseP99 [3]time.Duration
}

// OK is the share of the requests answered 2xx (1 when none were sent).
func (c ClassResult) OK() float64 {
	if c.Sent == 0 {
		return 1
	}
	return float64(c.Passed) / float64(c.Sent)
}

// LimitSample is sluice's in-flight limit at one moment.
type LimitSample struct {
	At                     time.Duration
	Phase                  string
	Limit, InFlight, Queue int
}

// RunOverload plays the month-end story: a claims service of fixed
// capacity, sluice in front of it with a protect block, and callers of
// four kinds of request. During the month-end phase the service is four
// times as slow and reports and exports surge; critical claim reads keep
// their latency objective while reports are switched off and exports shed.
// It prints the limit over time and a table per kind of request, stops
// everything it started and returns what it measured. When ctx ends early
// the table is still printed.
func RunOverload(ctx context.Context, opts OverloadOptions) (*OverloadResult, error) {
	opts = opts.withDefaults()
	out := &printer{w: opts.Out}
	s, err := setUpOverload(opts)
	if err != nil {
		return nil, err
	}
	out.overloadIntro(s, opts)
	gwCtx, stopGateway := context.WithCancel(context.WithoutCancel(ctx))
	defer stopGateway()
	s.start(gwCtx)
	baseline, baselineMax := s.baseline(ctx, opts, out)
	res := s.play(ctx, opts, out)
	res.Baseline, res.BaselineMaxInFlight = baseline, baselineMax
	err = s.tearDown(stopGateway)
	res.UpstreamMaxInFlight = s.model.Stats().MaxInFlight
	out.overloadTable(res)
	out.overloadConclusion(res)
	return res, errors.Join(err, out.err)
}
