package demo

import (
	"context"
	"sync"
	"time"
)

// baseline sends the month-end's load straight at the claims service,
// slowed down as at month-end, for opts.Baseline, without sluice: what
// the month-end would be without it. Every request is answered (or times
// out) before it returns, so the story starts on an idle service, whose
// count of the most at once it then forgets. It returns what became of each
// kind of request and the most the service had at once.
func (o *overloadScene) baseline(ctx context.Context, opts OverloadOptions, out *printer) ([]ClassResult, int) {
	out.printf("  without sluice: %v of the month-end's load straight at the claims service (%d× as slow) ...\n",
		opts.Baseline, monthEndSlowdown)
	classes := loadClasses(o.classes[0].client, o.claimsURL)
	o.model.SetSlowdown(monthEndSlowdown)
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range classes {
		wg.Go(func() { c.run(ctx, opts.Baseline, func(time.Duration) int { return phaseMonthEnd }, start) })
	}
	wg.Wait()
	o.model.SetSlowdown(1)
	most := o.model.Stats().MaxInFlight
	o.model.Reset()
	res := make([]ClassResult, len(classes))
	for i, c := range classes {
		res[i] = c.snapshot()
	}
	reads := res[0]
	out.printf("  without sluice: claim reads p99 %s (objective %v), %d of %d answered; at the service at once: at most %d\n\n",
		msText(reads.P99), objective, reads.Passed, reads.Sent, most)
	return res, most
}
