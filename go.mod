module github.com/sluice-rl/sluice

go 1.26.0

require (
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/redis/rueidis v1.0.79 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
