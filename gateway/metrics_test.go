package gateway_test

import "testing"

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
