module github.com/sluice-rl/sluice/bench/client

go 1.26.0

require (
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/sluice-rl/sluice v0.0.0-00010101000000-000000000000
)

require github.com/hashicorp/go-cleanhttp v0.5.2 // indirect

replace github.com/sluice-rl/sluice => ../..
