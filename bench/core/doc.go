// Package core benchmarks sluice's memory store against other Go rate
// limiters on the same machine: golang.org/x/time/rate and
// github.com/sethvargo/go-limiter's memorystore. It is a module of its own
// so that sluice itself never depends on them. Run it with bench/run.sh core.
package core
