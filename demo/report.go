package demo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// printer writes the demo's output from several goroutines, a line or a
// block at a time, and keeps the first write error.
type printer struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return
	}
	if _, err := fmt.Fprintf(p.w, format, args...); err != nil {
		p.err = fmt.Errorf("demo: write output: %w", err)
	}
}

// intro tells who is who and shows sluice's configuration.
func (p *printer) intro(s *scene) {
	var b strings.Builder
	b.WriteString("sluice demo: an insurer's claims service, two partner firms, one limit\n\n")
	fmt.Fprintf(&b, "  claims service  %-24s GET /claims/{id}; decides itself who may see which claim\n", s.claimsURL)
	fmt.Fprintf(&b, "  sluice          %-24s in front of it; admin (metrics, health) on %s\n", s.sluiceURL, s.adminURL)
	fmt.Fprintf(&b, "  dashboard       %-24s open it in a browser while the demo runs: who is limited, who is close, and why\n", s.adminURL+"/")
	fmt.Fprintf(&b, "  %-15s %-24s buggy program: %s, ignores Retry-After\n", partnerA, "key "+s.a.key, pace(s.a.every))
	fmt.Fprintf(&b, "  %-15s %-24s normal program: %s, once asks for a claim of %s\n\n", partnerB, "key "+s.b.key, pace(s.b.every), partnerA)
	b.WriteString("sluice's configuration (`sluice serve --config` reads the same file):\n\n")
	for line := range strings.Lines(s.yaml) {
		if line != "\n" {
			b.WriteString("    ")
		}
		b.WriteString(line)
	}
	fmt.Fprintf(&b, "\nthe partners send for %s (Ctrl-C ends early) ...\n\n", s.duration)
	p.printf("%s", b.String())
}

// pace describes a request interval as a rate, such as "9 requests/s (540/min)".
func pace(every time.Duration) string {
	perSec := float64(time.Second) / float64(every)
	unit := "requests/s"
	if perSec == 1 {
		unit = "request/s"
	}
	return fmt.Sprintf("%s %s (%s/min)", strconv.FormatFloat(perSec, 'g', 4, 64), unit,
		strconv.FormatFloat(perSec*60, 'f', 0, 64))
}

// progress prints one line of the partners' figures so far.
func (p *printer) progress(elapsed time.Duration, a, b PartnerResult) {
	p.printf("  %4ds   %s   %s\n", int(elapsed/time.Second), progressOf(a), progressOf(b))
}

func progressOf(r PartnerResult) string {
	return fmt.Sprintf("%s: sent %3d, passed %3d, 429 %3d", r.ID, r.Sent, r.Passed, r.Limited)
}

// foreignClaim shows what became of a partner asking for another's claim.
func (p *printer) foreignClaim(who, owner string, a *Answer) {
	p.printf("  %s asking for a claim of %s: %s (the claims service authorises; sluice only counts)\n",
		who, owner, a.Status)
}

// shownHeaders are the headers of a 429 worth showing, as the draft spells them.
var shownHeaders = []string{"Retry-After", "RateLimit-Policy", "RateLimit", "Cache-Control", "Content-Type"}

// rejection shows a 429 answer, headers and body, as the partner got it.
func (p *printer) rejection(who string, a *Answer) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n  %s request %d (at %.1fs): sluice answers itself, the claims service never sees it:\n\n",
		who, a.Request, a.At.Seconds())
	b.WriteString(answerText(a, "      "))
	fmt.Fprintf(&b, "  %s ignores Retry-After (its bug) and keeps sending; sluice keeps answering 429.\n\n", who)
	p.printf("%s", b.String())
}

// answerText is a as its caller saw it, each line indented: the status
// line, the headers that tell why and when to retry, the body (JSON
// indented), and an empty line.
func answerText(a *Answer, indent string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%sHTTP/1.1 %s\n", indent, a.Status)
	for _, name := range shownHeaders {
		for _, v := range a.Header.Values(name) {
			fmt.Fprintf(&b, "%s%s: %s\n", indent, name, v)
		}
	}
	var body bytes.Buffer
	if json.Indent(&body, bytes.TrimSpace(a.Body), indent, "  ") != nil {
		body.Reset()
		body.Write(bytes.TrimSpace(a.Body))
	}
	fmt.Fprintf(&b, "\n%s%s\n\n", indent, body.String())
	return b.String()
}

// table prints the final figures per partner and what they mean.
func (p *printer) table(res *Result) {
	var b strings.Builder
	how := "after"
	if res.Interrupted {
		how = "interrupted after"
	}
	fmt.Fprintf(&b, "\nresult %s %.1fs (rule claims: at most 100 requests per partner in any 60s):\n\n", how, res.Elapsed.Seconds())
	fmt.Fprintf(&b, "  %-10s %6s %7s %6s %16s %8s %8s\n", "partner", "sent", "passed", "429", "reached service", "p50 ms", "p99 ms")
	for _, r := range []PartnerResult{res.PartnerA, res.PartnerB} {
		fmt.Fprintf(&b, "  %-10s %6d %7d %6d %16d %8.2f %8.2f\n", r.ID, r.Sent, r.Passed, r.Limited, r.Reached, ms(r.P50), ms(r.P99))
	}
	b.WriteString("\n  passed: let through by sluice and answered by the claims service (200, or 403 for another partner's claim)\n")
	b.WriteString("  429: answered by sluice alone; reached service: counted by the claims service itself\n")
	b.WriteString("  p50/p99: latency of the answers as each partner's program saw them\n")
	for _, r := range []PartnerResult{res.PartnerA, res.PartnerB} {
		if r.Failed > 0 {
			fmt.Fprintf(&b, "  %s: %d requests got no usable answer (timeouts, connection errors, other statuses)\n", r.ID, r.Failed)
		}
	}
	p.printf("%s", b.String())
}

// conclusion sums the story up in a line and says where to go next.
func (p *printer) conclusion(res *Result) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s; %s.\n", limitedLine(res.PartnerA), limitedLine(res.PartnerB))
	if res.PartnerA.Limited > 0 {
		b.WriteString("sluice does not fix partner-a's program; it keeps the bug from reaching the claims service and partner-b.\n\n")
	} else {
		b.WriteString("partner-a has not reached its limit yet; let the whole demo run to see sluice stop it.\n\n")
	}
	b.WriteString("next: put sluice in front of your own service with a file like the one above:\n")
	b.WriteString("  sluice check --config sluice.yaml    validates it (file:line:col for every problem)\n")
	b.WriteString("  sluice serve --config sluice.yaml    runs it; the dashboard on the admin address at /, metrics at /metrics\n")
	b.WriteString("  README.md and docs/configuration.md describe rules, algorithms, stores and headers\n")
	p.printf("%s", b.String())
}

// limitedLine says in words whether a partner was limited.
func limitedLine(r PartnerResult) string {
	switch {
	case r.Sent == 0:
		return r.ID + " sent nothing"
	case r.Limited > 0:
		return fmt.Sprintf("%s was limited to %d of %d requests", r.ID, r.Passed, r.Sent)
	case r.Passed == r.Sent:
		return fmt.Sprintf("%s: all %d passed, none limited", r.ID, r.Sent)
	}
	return fmt.Sprintf("%s: %d of %d passed, none limited", r.ID, r.Passed, r.Sent)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
