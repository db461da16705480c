package demo

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// overloadIntro tells who is who and shows sluice's configuration.
func (p *printer) overloadIntro(o *overloadScene, opts OverloadOptions) {
	var b strings.Builder
	b.WriteString("sluice demo overload: the claims service slows down at month-end\n\n")
	fmt.Fprintf(&b, "  claims service  %-24s %d requests at once, %v each (%v at month-end); more wait in its backlog\n",
		o.claimsURL, workers, serviceTime, serviceTime*monthEndSlowdown)
	fmt.Fprintf(&b, "  sluice          %-24s in front of it; admin (metrics) on %s\n\n", o.sluiceURL, o.adminURL)
	b.WriteString("  callers (requests a second: calm / month-end / after; they never slow down):\n")
	for _, c := range o.classes {
		fmt.Fprintf(&b, "    %-12s %-4s %-14s %-13s %3.0f / %3.0f / %3.0f\n", c.name, c.method, strings.SplitN(c.path, "?", 2)[0]+"…",
			classPriority(c.priority, c.degrade), c.perSec[0], c.perSec[1], c.perSec[2])
	}
	b.WriteString("\nsluice's configuration (`sluice serve --config` reads the same file):\n\n")
	for line := range strings.Lines(o.yaml) {
		if line != "\n" {
			b.WriteString("    ")
		}
		b.WriteString(line)
	}
	fmt.Fprintf(&b, "\n%s calm, %s month-end, %s after (Ctrl-C ends early) ...\n\n", opts.Calm, opts.MonthEnd, opts.After)
	p.printf("%s", b.String())
}

func classPriority(priority string, degrade bool) string {
	if degrade {
		return priority + ", degrade"
	}
	return priority
}

// enter starts a phase: the month-end slows the claims service down, the
// day after it is itself again.
func (o *overloadScene) enter(phase int, at time.Duration, out *printer) int {
	if phase == phaseMonthEnd {
		o.model.SetSlowdown(monthEndSlowdown)
		out.printf("  %4.1fs  month-end: the claims service is now %d× as slow (%v a request)\n",
			at.Seconds(), monthEndSlowdown, serviceTime*monthEndSlowdown)
	} else {
		o.model.SetSlowdown(1)
		out.printf("  %4.1fs  month-end over: the claims service is itself again\n", at.Seconds())
	}
	return phase
}

// sample reads sluice's limit from its metrics and prints it with the
// claims service's own count.
func (o *overloadScene) sample(ctx context.Context, at time.Duration, phase int, out *printer) LimitSample {
	m := scrape(ctx, o.classes[0].client, o.metrics)
	const svc = `{upstream="default"}` // the one service of upstream
	s := LimitSample{At: at, Phase: phaseNames[phase], Limit: int(m["sluice_in_flight_limit"+svc]),
		InFlight: int(m["sluice_in_flight"+svc]), Queue: int(m["sluice_queue_length"+svc])}
	p99 := o.classes[0].takeWindow()
	out.printf("  %4.1fs  %-9s  limit %2d of %d   in flight %2d   queue %3d   at the service %2d   claim reads p99 (last %v) %s\n",
		at.Seconds(), s.Phase, s.Limit, ceiling, s.InFlight, s.Queue, o.model.Stats().InFlight, o.progress, msText(p99))
	return s
}

// fillResult puts the callers' figures and sluice's queue counts into res.
func (o *overloadScene) fillResult(ctx context.Context, res *OverloadResult) {
	m := scrape(ctx, o.classes[0].client, o.metrics)
	for _, c := range o.classes {
		r := c.snapshot()
		all, ok := m[`sluice_queue_wait_seconds_count{priority="`+r.Priority+`"}`]
		soon := m[`sluice_queue_wait_seconds_bucket{le="0.001",priority="`+r.Priority+`"}`]
		if ok {
			r.Queued = int(all - soon)
		}
		res.Classes = append(res.Classes, r)
	}
	res.LimitBefore, res.LimitLowest, res.LimitAfter = limitStory(res.Limits)
}

// limitStory reads from samples the limit at the last sample before the
// month-end, the lowest from then on, and the last; 0 where there is no
// such sample.
func limitStory(samples []LimitSample) (before, lowest, last int) {
	for _, s := range samples {
		if s.Phase == phaseNames[phaseCalm] {
			before = s.Limit
			continue
		}
		if lowest == 0 || s.Limit < lowest {
			lowest = s.Limit
		}
		last = s.Limit
	}
	return before, lowest, last
}

// scrape reads sluice's metrics with client: series (with their labels,
// sorted by name) to values. Nothing when they cannot be read.
func scrape(ctx context.Context, client *http.Client, url string) map[string]float64 {
	m := make(map[string]float64)
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return m
	}
	resp, err := client.Do(req)
	if err != nil {
		return m
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if strings.HasPrefix(line, "#") || i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[sortLabels(line[:i])] = v
		}
	}
	return m
}

// sortLabels writes a series' labels in the order of their names, so that
// `x{priority="low",le="0.001"}` is found as `x{le="0.001",priority="low"}`.
func sortLabels(series string) string {
	i := strings.IndexByte(series, '{')
	if i < 0 || !strings.HasSuffix(series, "}") {
		return series
	}
	labels := strings.Split(series[i+1:len(series)-1], ",") // the demo's label values hold no commas
	slices.Sort(labels)
	return series[:i] + "{" + strings.Join(labels, ",") + "}"
}

// msText is a latency in whole milliseconds, "-" for none.
func msText(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// overloadTable prints what became of each kind of request.
func (p *printer) overloadTable(res *OverloadResult) {
	var b strings.Builder
	if res.Interrupted {
		fmt.Fprintf(&b, "\nresult interrupted after %.1fs:\n", res.Elapsed.Seconds())
	}
	fmt.Fprintf(&b, "\n%-12s %-15s %6s %7s %9s %6s %7s %7s %7s\n", "request", "priority", "sent", "passed", "degraded", "shed", "queued", "p50 ms", "p99 ms")
	for _, c := range res.Classes {
		queued := "?"
		if c.Queued >= 0 {
			queued = strconv.Itoa(c.Queued)
		}
		fmt.Fprintf(&b, "%-12s %-15s %6d %7d %9d %6d %7s %7s %7s\n", c.Name, classPriority(c.Priority, c.Degrade),
			c.Sent, c.Passed, c.Degraded, c.Shed, queued, msNumber(c.P50), msNumber(c.P99))
	}
	b.WriteString("\nthe in-flight limit over time:")
	for i, s := range res.Limits {
		if i == 0 || s.Phase != res.Limits[i-1].Phase {
			fmt.Fprintf(&b, "\n  %-9s", s.Phase)
		}
		fmt.Fprintf(&b, " %d", s.Limit)
	}
	fmt.Fprintf(&b, "\n\nat the claims service at once: at most %d (ceiling %d)\n", res.UpstreamMaxInFlight, res.Ceiling)
	p.printf("%s", b.String())
	p.phaseTable(res)
}

// phaseTable prints each kind of request's p99 in each phase on its own,
// beside the baseline's (the month-end's load without sluice).
func (p *printer) phaseTable(res *OverloadResult) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-12s %8s %10s %8s   %s\n", "p99 ms", "calm", "month-end", "after", "month-end without sluice (answered)")
	for i, c := range res.Classes {
		without := "-"
		if i < len(res.Baseline) {
			bc := res.Baseline[i]
			without = fmt.Sprintf("%s (%d of %d)", msNumber(bc.P99), bc.Passed, bc.Sent)
		}
		fmt.Fprintf(&b, "%-12s %8s %10s %8s   %s\n", c.Name, msNumber(c.PhaseP99[phaseCalm]),
			msNumber(c.PhaseP99[phaseMonthEnd]), msNumber(c.PhaseP99[phaseAfter]), without)
	}
	p.printf("%s", b.String())
}

func msNumber(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// overloadConclusion says in words what the table shows.
func (p *printer) overloadConclusion(res *OverloadResult) {
	if len(res.Classes) < 4 {
		return
	}
	reads, claims, reports, exports := res.Classes[0], res.Classes[1], res.Classes[2], res.Classes[3]
	within := "within"
	if reads.P99 > objective {
		within = "above"
	}
	p.printf("\nclaim reads: %d of %d answered (%.1f%%), p99 %s (%s at month-end), %s their %v objective.\n",
		reads.Passed, reads.Sent, 100*reads.OK(), msText(reads.P99), msText(reads.PhaseP99[phaseMonthEnd]), within, objective)
	if len(res.Baseline) > 0 {
		p.printf("without sluice, the same month-end load gave claim reads a p99 of %s, and the service %d at once.\n",
			msText(res.Baseline[0].P99), res.BaselineMaxInFlight)
	}
	p.printf("new claims: %d of %d answered, %s of them after waiting for a slot in sluice's queue.\n",
		claims.Passed, claims.Sent, queuedText(claims.Queued))
	p.printf("reports switched off %d times while the service was busy; %d exports shed.\n", reports.Degraded, exports.Shed)
	p.printf("%s\n", recoveryText(res))
}

// recoveryText says whether the adaptive limit came back after the
// month-end, and why not when it did not.
func recoveryText(res *OverloadResult) string {
	if res.LimitBefore == 0 || res.LimitLowest == 0 {
		return "the adaptive limit: too few samples to tell how it moved."
	}
	s := fmt.Sprintf("the adaptive limit: %d before the month-end, %d at its lowest, %d at the end: ",
		res.LimitBefore, res.LimitLowest, res.LimitAfter)
	switch {
	case res.LimitAfter >= res.LimitBefore:
		return s + "recovered."
	case res.LimitAfter >= workers:
		inFlight := res.Limits[len(res.Limits)-1].InFlight
		return s + fmt.Sprintf("recovered in effect.\n  It grows only while at least half of it is in use, and the day after keeps %d in flight;\n"+
			"  above the service's %d workers it holds back nothing the service can do at once, and it grows\n"+
			"  again by a tenth a window when a busy hour uses it.", inFlight, workers)
	}
	return s + "not recovered: the service was still slow at the end."
}

func queuedText(n int) string {
	if n < 0 {
		return "some may have"
	}
	return strconv.Itoa(n)
}
