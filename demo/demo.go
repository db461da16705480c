package demo

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"time"
)

// The partners, their access keys and the header that carries them.
const (
	partnerA  = "partner-a"
	partnerB  = "partner-b"
	keyA      = "key-a"
	keyB      = "key-b"
	keyHeader = "X-API-Key"
)

// Options tune the demo; the zero value is the real demo.
type Options struct {
	// Duration is how long the partners send. Default 40s.
	Duration time.Duration
	// Out receives the progress and the final table. Default os.Stdout.
	Out io.Writer
	// Progress is the interval between progress lines. Default 5s.
	Progress time.Duration
	// PartnerAEvery is the pace of partner A's buggy program: one request
	// per interval. Default time.Second/9, about 540 requests a minute.
	PartnerAEvery time.Duration
	// PartnerBEvery is the pace of partner B's normal program. Default 1s.
	PartnerBEvery time.Duration
}

func (o Options) withDefaults() Options {
	if o.Duration <= 0 {
		o.Duration = 40 * time.Second
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Progress <= 0 {
		o.Progress = 5 * time.Second
	}
	if o.PartnerAEvery <= 0 {
		o.PartnerAEvery = time.Second / 9
	}
	if o.PartnerBEvery <= 0 {
		o.PartnerBEvery = time.Second
	}
	return o
}

// probeRequest is the number of partner B's request that asks for a claim of
// partner A instead of one of its own.
const probeRequest = 3

// Result is what the demo measured.
type Result struct {
	// Elapsed is how long the partners sent: Options.Duration, or less when
	// the context ended first.
	Elapsed time.Duration
	// Interrupted reports that the context ended before Duration was over.
	Interrupted bool
	// PartnerA and PartnerB are the partners' figures.
	PartnerA, PartnerB PartnerResult
	// FirstRejection is the first 429 partner A got; nil if none.
	FirstRejection *Answer
	// Findings are the typical mistakes sluice recognised meanwhile (its
	// overview's findings at the end).
	Findings []Finding
}

// Run plays the claims story: it starts the claims service and sluice in
// front of it on free ports of 127.0.0.1, lets partner A's buggy program and
// partner B's normal one send for opts.Duration, printing progress, and
// prints the outcome. It stops everything it started before it returns. When
// ctx ends early the partners stop and the table is still printed; that is
// not an error. Errors are for a demo that could not be set up or whose
// servers failed; the Result is returned with them when there is one.
func Run(ctx context.Context, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	out := &printer{w: opts.Out}
	s, err := setUp(opts, out)
	if err != nil {
		return nil, err
	}
	out.intro(s)
	gwCtx, stopGateway := context.WithCancel(context.WithoutCancel(ctx))
	defer stopGateway()
	s.start(gwCtx)
	res := s.play(ctx, opts, out)
	res.Findings, err = s.findings(ctx)
	err = errors.Join(err, s.tearDown(stopGateway))
	res.PartnerA.Reached = s.service.reachedBy(partnerA)
	res.PartnerB.Reached = s.service.reachedBy(partnerB)
	out.table(res)
	out.findingsOf(res.Findings, partnerA, partnerB)
	out.conclusion(res)
	return res, errors.Join(err, out.err)
}

// play lets the partners send and prints progress until they are done, ctx
// ends or the gateway stops.
func (s *scene) play(ctx context.Context, opts Options, out *printer) *Result {
	pctx, stopPartners := context.WithCancel(ctx)
	defer stopPartners()
	start := time.Now()
	var wg sync.WaitGroup
	for _, p := range []*partner{s.a, s.b} {
		wg.Go(func() { p.run(pctx, start, opts.Duration) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(opts.Progress)
	defer tick.Stop()
	gwStopped := s.gwStopped
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-tick.C:
			if e := time.Since(start); e < opts.Duration { // else the table follows at once
				out.progress(e, s.a.snapshot(), s.b.snapshot())
			}
		case <-gwStopped:
			stopPartners() // nobody would answer them
			gwStopped = nil
		}
	}
	res := &Result{Elapsed: opts.Duration, Interrupted: pctx.Err() != nil}
	if res.Interrupted {
		res.Elapsed = min(time.Since(start), opts.Duration)
	}
	res.PartnerA, res.PartnerB = s.a.snapshot(), s.b.snapshot()
	s.a.mu.Lock()
	res.FirstRejection = s.a.first429
	s.a.mu.Unlock()
	return res
}
