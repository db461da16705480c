# sluice: `make test` installs what the tests need and runs every test.

GO ?= go

.PHONY: test deps vet unit fuzz bench demo compat build release

test: deps vet unit

# Tests start real redis-server processes (standalone and cluster), a
# real nginx and HAProxy and a headless chromium; install Debian's
# redis-server, nginx, haproxy and chromium when they are missing, and the
# tools deploy/'s files are checked with.
deps:
	@command -v redis-server >/dev/null || { \
		echo "installing redis-server"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }
	@# Debian starts a system redis on 6379; the tests never use it.
	@command -v redis-server >/dev/null || { echo "redis-server still missing" >&2; exit 1; }
	@# The /check end-to-end test runs a real nginx (auth_request) on its own
	@# ports and prefix; nginx-light is enough where Debian still has it. No
	@# system nginx may start on *:80 on install (policy-rc.d answering 101).
	@PATH="$$PATH:/usr/sbin" command -v nginx >/dev/null || { \
		echo "installing nginx"; made=; \
		[ -e /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && made=1; }; \
		apt-get update -qq && { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null 2>&1 || \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null; }; \
		[ -z "$$made" ] || rm -f /usr/sbin/policy-rc.d; }
	@PATH="$$PATH:/usr/sbin" command -v nginx >/dev/null || { echo "nginx still missing" >&2; exit 1; }
	@# The sticky-session tests (deploy/) run a real HAProxy too (Debian's
	@# haproxy, ~2 MB), on their own ports; no system haproxy may start on
	@# install.
	@PATH="$$PATH:/usr/sbin" command -v haproxy >/dev/null || { \
		echo "installing haproxy"; made=; \
		[ -e /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && made=1; }; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends haproxy >/dev/null 2>&1; \
		[ -z "$$made" ] || rm -f /usr/sbin/policy-rc.d; }
	@PATH="$$PATH:/usr/sbin" command -v haproxy >/dev/null || { echo "haproxy still missing" >&2; exit 1; }
	@# The dashboard's test renders it in a real browser: Debian's chromium,
	@# headless.
	@command -v chromium >/dev/null || { \
		echo "installing chromium"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@command -v chromium >/dev/null || { echo "chromium still missing" >&2; exit 1; }
	@# The TLS tests handshake with curl (asking for HTTP/2) and openssl
	@# s_client besides Go's client.
	@command -v curl >/dev/null && command -v openssl >/dev/null || { \
		echo "installing curl and openssl"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl openssl >/dev/null; }
	@command -v curl >/dev/null && command -v openssl >/dev/null || { echo "curl or openssl still missing" >&2; exit 1; }
	@# deploy/'s tests check the systemd unit with systemd-analyze (Debian's
	@# systemd, ~10 MB) and the alert rules with promtool (Debian's prometheus,
	@# ~19 MB to download, without its recommends); no service may start on
	@# install. Their tests skip, saying why, where these cannot be installed.
	@command -v systemd-analyze >/dev/null && command -v promtool >/dev/null || { \
		echo "installing systemd and prometheus (systemd-analyze, promtool)"; made=; \
		[ -e /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && made=1; }; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd prometheus >/dev/null 2>&1 || \
			echo "could not install systemd or prometheus: their deploy/ tests will skip" >&2; \
		[ -z "$$made" ] || rm -f /usr/sbin/policy-rc.d; }

# deploy/kubernetes and deploy/traefik are modules of their own (the
# Kubernetes API types and Traefik's dynamic-configuration types their
# tests decode the files into stay out of sluice's go.mod); they are
# vetted, tidied and tested with the main module.
KUBE_MOD = deploy/kubernetes
TRAEFIK_MOD = deploy/traefik

# go.mod and go.sum must be tidy: `go mod tidy -diff` prints what tidying
# would change and fails (it needs the module proxy or a warm module cache).
vet:
	$(GO) mod tidy -diff
	$(GO) vet ./...
	cd $(KUBE_MOD) && $(GO) mod tidy -diff && $(GO) vet ./...
	cd $(TRAEFIK_MOD) && $(GO) mod tidy -diff && $(GO) vet ./...
	@# bench/core and bench/client are modules of their own on sluice's Go API:
	@# vetted (so compiled, tests too) so that an API change cannot leave them broken.
	cd bench/core && $(GO) vet ./...
	cd bench/client && $(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l . ; echo "gofmt needed" >&2; exit 1; }

# -race always; fuzz targets run their seed corpus as plain tests.
unit:
	$(GO) test -race -count=1 -timeout 15m ./...
	cd $(KUBE_MOD) && $(GO) test -race -count=1 ./...
	cd $(TRAEFIK_MOD) && $(GO) test -race -count=1 ./...

# A longer fuzzing pass, not part of `make test`.
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzDecideInvariants -fuzztime=60s ./limiter/

bench:
	bash bench/run.sh

demo:
	$(GO) run ./cmd/sluice demo

# envoyproxy/ratelimit and sluice side by side on that service's own rule
# files; not part of `make test` (its tables are, in rls's tests). Needs a
# checkout of github.com/envoyproxy/ratelimit: make compat RATELIMIT_SRC=DIR
compat:
	RATELIMIT_SRC="$(RATELIMIT_SRC)" bash rls/compat/compat.sh

# What `sluice version` and sluice_build_info name, set with the linker so
# that a build without VCS stamping (-buildvcs=false, a git worktree) names
# them too: VERSION is the tag `git describe` finds (v1.2.0, or
# v1.2.0-3-g0123abc past it), else a pseudo-version of the commit as the go
# command writes one (v0.0.0-20261201150300-0123456789ab); `make release
# VERSION=v1.2.0` sets it by hand.
BUILDINFO = github.com/sluice-rl/sluice/internal/buildinfo
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' 2>/dev/null || \
	TZ=UTC git log -1 --format='v0.0.0-%cd-%H' --date=format-local:%Y%m%d%H%M%S 2>/dev/null | cut -c1-34)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
MODIFIED ?= $(shell git diff --quiet HEAD -- 2>/dev/null && echo false || echo true)
LDFLAGS = -s -w -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).revision=$(REVISION) -X $(BUILDINFO).modified=$(MODIFIED)
# Static (no cgo), reproducible paths (-trimpath).
GOBUILD = CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)'

# bin/sluice for this machine.
build:
	@test -n "$(VERSION)" || { echo "no version: not a git checkout; make build VERSION=v1.2.0" >&2; exit 1; }
	$(GOBUILD) -o bin/sluice ./cmd/sluice

# Versioned binaries for each platform in $(DIST), and their SHA-256 sums in
# $(DIST)/SHA256SUMS (check with: sha256sum -c SHA256SUMS). Not part of
# `make test`; a test builds one platform of it.
PLATFORMS ?= linux/amd64 linux/arm64 darwin/arm64
DIST ?= dist
release:
	@test -n "$(VERSION)" || { echo "no version: not a git checkout; make release VERSION=v1.2.0" >&2; exit 1; }
	@mkdir -p $(DIST) && rm -f $(DIST)/sluice-* $(DIST)/SHA256SUMS
	@for p in $(PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; out=sluice-$(VERSION)-$$os-$$arch; \
		echo "$(DIST)/$$out"; GOOS=$$os GOARCH=$$arch $(GOBUILD) -o $(DIST)/$$out ./cmd/sluice || exit 1; done
	@cd $(DIST) && { command -v sha256sum >/dev/null && sha256sum sluice-* || shasum -a 256 sluice-*; } >SHA256SUMS
	@cat $(DIST)/SHA256SUMS
