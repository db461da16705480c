package promlimit

import "github.com/prometheus/client_golang/prometheus"

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
