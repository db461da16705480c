package demo

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Finding is one typical mistake sluice recognised while the demo ran, as
// the admin address's /api/v1/overview reports it.
type Finding struct {
	Kind    string   `json:"kind"`
	Rule    string   `json:"rule"`
	Clients []string `json:"clients"`
	Detail  string   `json:"detail"`
}

// findings asks the running sluice which typical mistakes it saw: the
// overview the dashboard draws.
func (s *scene) findings(ctx context.Context) ([]Finding, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.adminURL+"/api/v1/overview", nil)
	if err != nil {
		return nil, fmt.Errorf("demo: ask for sluice's findings: %w", err)
	}
	resp, err := (&http.Client{Transport: s.client}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("demo: ask for sluice's findings: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("demo: ask for sluice's findings: %s", resp.Status)
	}
	var o struct{ Findings []Finding }
	if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
		return nil, fmt.Errorf("demo: read sluice's findings: %w", err)
	}
	return o.Findings, nil
}

// kindNames are the findings' kinds in words.
var kindNames = map[string]string{
	"retries_too_soon":  "retries too soon",
	"limit_too_low":     "limit too low",
	"shared_address":    "shares an address with other partners",
	"separate_counters": "counted apart by instances that should share",
}

// findingsOf prints, per partner, what sluice recognised of it.
func (p *printer) findingsOf(fs []Finding, partners ...string) {
	var b strings.Builder
	b.WriteString("\nwhat sluice recognised (the dashboard's findings):\n")
	for _, id := range partners {
		var seen []string
		for _, f := range fs {
			if slices.Contains(f.Clients, id) {
				seen = append(seen, fmt.Sprintf("%s (rule %s): %s", cmp.Or(kindNames[f.Kind], f.Kind), f.Rule, f.Detail))
			}
		}
		if len(seen) == 0 {
			seen = []string{"none"}
		}
		fmt.Fprintf(&b, "  %-10s %s\n", id+":", strings.Join(seen, "\n             "))
	}
	p.printf("%s", b.String())
}
