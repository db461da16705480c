package promlimit

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/store/failover"
)

// factory makes the Collector's series with its namespace and constant
// labels, the options written once.
type factory struct{ opts Options }

func (f factory) counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Namespace: f.opts.Namespace, Name: name, Help: help, ConstLabels: f.opts.ConstLabels})
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: f.opts.Namespace, Name: name, Help: help, ConstLabels: f.opts.ConstLabels}, labels)
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: f.opts.Namespace, Name: name, Help: help, Buckets: buckets, ConstLabels: f.opts.ConstLabels})
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: f.opts.Namespace, Name: name, Help: help, Buckets: buckets, ConstLabels: f.opts.ConstLabels}, labels)
}

// failover exports a failover store's own state and counters, read when
// collected, so that they never disagree with what the store does.
func (f factory) failover(fs *failover.Store) []prometheus.Collector {
	gauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: f.opts.Namespace, Name: "store_degraded", ConstLabels: f.opts.ConstLabels,
		Help: "1 while the shared store is unreachable and on_failure decides, 0 while counting is shared."},
		func() float64 {
			if fs.Degraded() {
				return 1
			}
			return 0
		})
	counter := func(name, help string, read func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: f.opts.Namespace, Name: name, Help: help, ConstLabels: f.opts.ConstLabels},
			func() float64 { return float64(read()) })
	}
	return []prometheus.Collector{gauge,
		counter("store_shared_errors_total", "Calls to the shared store (Redis) that failed or timed out.",
			fs.Stats().SharedErrors.Load),
		counter("store_cached_rejections_total", "Rejections answered locally from the shared store's earlier denial, without asking it.",
			fs.Stats().CachedRejections.Load),
		counter("store_degraded_decisions_total", "Decisions made by the failure policy (on_failure) while the shared store was unreachable.",
			fs.Stats().Degraded.Load)}
}
