// Package deploy holds no code: its tests check the files operators deploy
// sluice with, each by the tool that reads it where this machine has one:
// the systemd unit by systemd-analyze, the alert rules by promtool, the
// Grafana dashboard against a live sluice's /metrics, the Envoy
// configuration by Envoy's own API types and sluice's rate limit service,
// the container files by what they build and run. The Kubernetes manifests
// are checked in deploy/kubernetes and the Traefik configuration in
// deploy/traefik, each a module of its own; the nginx recipes asking
// /check in deploy/nginx by cmd/sluice's tests, which run a real nginx;
// the sticky-session recipes (nginx, HAProxy, Envoy) by this package's,
// which run a real nginx and HAProxy in front of `sluice serve`.
package deploy
