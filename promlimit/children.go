package promlimit

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// maxCachedChildren bounds a children cache: past it a vector's children
// are looked up by the vector itself, as without the cache, so that a
// copy per new child never grows with the square of a large count.
const maxCachedChildren = 4096

// children finds a CounterVec's child by its label values without the
// vector's work per call (hashing every value, a read lock shared by every
// core): a map read with one atomic load, replaced whole when a new
// combination appears (it seldom does: a combination is a rule, a client
// and an outcome of the configuration). Safe for concurrent use.
type children[K comparable] struct {
	vec *prometheus.CounterVec
	mu  sync.Mutex // held to replace m
	m   atomic.Pointer[map[K]prometheus.Counter]
}

// get returns the child of k, whose label values are values().
func (c *children[K]) get(k K, values func() []string) prometheus.Counter {
	m := c.m.Load()
	if m != nil {
		if ch, ok := (*m)[k]; ok {
			return ch
		}
		if len(*m) >= maxCachedChildren {
			return c.vec.WithLabelValues(values()...)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if ch, ok := mapOf(old)[k]; ok {
		return ch
	}
	if len(mapOf(old)) >= maxCachedChildren {
		return c.vec.WithLabelValues(values()...)
	}
	next := make(map[K]prometheus.Counter, 1+len(mapOf(old)))
	for key, ch := range mapOf(old) {
		next[key] = ch
	}
	ch := c.vec.WithLabelValues(values()...)
	next[k] = ch
	c.m.Store(&next)
	return ch
}

func mapOf[K comparable](m *map[K]prometheus.Counter) map[K]prometheus.Counter {
	if m == nil {
		return nil
	}
	return *m
}

// requestKey and responseKey are the label values of requests_total and
// responses_total.
type requestKey struct{ rule, client, decision string }
type responseKey struct{ client, code string }
