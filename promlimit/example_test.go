package promlimit_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/promlimit"
	"github.com/sluice-rl/sluice/store/memory"
)

// The middleware's decisions as Prometheus series: the Collector is
// registered once and fed by the limiter's OnDecision and OnResponse.
func Example() {
	pol, err := policy.Compile(policy.Policy{Rules: []policy.Rule{{
		Name: "api", Key: policy.KeySpec{Kind: policy.KeyIP},
		Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 1, Period: time.Minute},
	}}})
	if err != nil {
		log.Fatal(err)
	}
	st := memory.New(memory.Options{})
	defer st.Close()

	metrics := promlimit.New(promlimit.Options{})
	registry := prometheus.NewRegistry() // or prometheus.MustRegister(metrics), served by promhttp.Handler()
	registry.MustRegister(metrics)
	lim, err := httplimit.New(httplimit.Options{Policy: pol, Store: st,
		OnDecision: metrics.OnDecision, OnResponse: metrics.OnResponse})
	if err != nil {
		log.Fatal(err)
	}

	handler := lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for range 3 {
		handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}
	families, err := registry.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "sluice_responses_total" {
			for _, m := range f.GetMetric() {
				fmt.Println(f.GetName(), m.GetLabel()[1].GetValue(), m.GetCounter().GetValue())
			}
		}
	}
	// Output:
	// sluice_responses_total 429 2
	// sluice_responses_total passed 1
}
