package gateway_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/promlimit"
)

// A request that rule "claims" rejects spent nothing of rule "all" that it
// also matched: sluice_requests_total counts it decision="not_spent" for
// "all", never "allowed".
func TestMetricsCountUnspentRules(t *testing.T) {
	h := startGateway(t, `listen: 127.0.0.1:18080
upstream: {{UPSTREAM}}
admin: 127.0.0.1:18090
clients:
  list:
    - id: partner-a
      keys: [`+keyA+`]
rules:
  - name: all
    algorithm: fixed_window
    rate: 100/m
  - name: claims
    match: { path: /claims }
    algorithm: fixed_window
    rate: 2/m
`)
	for range 3 {
		h.get("/claims/1", keyA)
	}
	m := h.metrics()
	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"rule=all", "client=partner-a", "decision=allowed"}, 2},
		{[]string{"rule=all", "client=partner-a", "decision=not_spent"}, 1},
		{[]string{"rule=claims", "client=partner-a", "decision=allowed"}, 2},
		{[]string{"rule=claims", "client=partner-a", "decision=limited"}, 1},
	} {
		if got := metric(m, "sluice_requests_total", c.labels...); got != c.want {
			t.Errorf("sluice_requests_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
}

// TestMetricsSharedWithPromlimit: the series the gateway shares with a Go
// program's promlimit.Collector are the same declaration: same names,
// same help texts, on the gateway's /metrics (queue waits once protect
// has admitted a request).
func TestMetricsSharedWithPromlimit(t *testing.T) {
	reg, series := prometheus.NewRegistry(), promlimit.NewSeries(promlimit.Options{})
	reg.MustRegister(series)
	series.Observe(&decision.Report{Client: "-", Rules: []decision.RuleResult{{Rule: "claims"}}, Throttled: true}) // a value in every family
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	h := startGateway(t, standardConfig)
	h.get("/claims/1", keyA)
	m := h.metrics()
	for _, f := range fams {
		if f.GetName() == "sluice_queue_wait_seconds" && !strings.Contains(m, "# HELP "+f.GetName()+" ") {
			continue // without protect, no priority has waited
		}
		if want := "# HELP " + f.GetName() + " " + f.GetHelp() + "\n"; !strings.Contains(m, want) {
			t.Errorf("the gateway's /metrics lacks %q", want)
		}
	}
	if len(fams) != 7 {
		t.Errorf("promlimit.NewSeries gathered %d families, want its decisions' 7", len(fams))
	}
}
