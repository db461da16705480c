package promlimit

import (
	"strconv"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestChildrenCountEveryCombination: counted through the cache, from
// several goroutines, past its bound, every combination of label values
// ends with its own count in the vector.
func TestChildrenCountEveryCombination(t *testing.T) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total"}, []string{"client", "code"})
	c := children[responseKey]{vec: vec}
	const clients = maxCachedChildren + 100
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range clients {
				k := responseKey{"c" + strconv.Itoa(i), strconv.Itoa(g % 2)}
				c.get(k, func() []string { return []string{k.client, k.code} }).Inc()
			}
		})
	}
	wg.Wait()
	if n := len(*c.m.Load()); n != maxCachedChildren {
		t.Errorf("%d children cached, want the bound %d", n, maxCachedChildren)
	}
	for _, i := range []int{0, 1, maxCachedChildren - 1, maxCachedChildren, clients - 1} {
		for code := range 2 {
			if got := testutil.ToFloat64(vec.WithLabelValues("c"+strconv.Itoa(i), strconv.Itoa(code))); got != 2 {
				t.Errorf("client c%d code %d counted %v, want 2", i, code, got)
			}
		}
	}
}
