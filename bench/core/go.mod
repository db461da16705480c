module github.com/sluice-rl/sluice/bench/core

go 1.26.0

require (
	github.com/sethvargo/go-limiter v0.7.1
	github.com/sluice-rl/sluice v0.0.0-00010101000000-000000000000
	golang.org/x/time v0.16.0
)

replace github.com/sluice-rl/sluice => ../..
