# sluice: `make test` installs what the tests need and runs every test.

GO ?= go

.PHONY: test deps vet unit fuzz bench demo compat

test: deps vet unit

# Tests start real redis-server processes (standalone and cluster), a
# real nginx and a headless chromium; install Debian's redis-server, nginx
# and chromium when they are missing.
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
	@# The dashboard's test renders it in a real browser: Debian's chromium,
	@# headless.
	@command -v chromium >/dev/null || { \
		echo "installing chromium"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@command -v chromium >/dev/null || { echo "chromium still missing" >&2; exit 1; }

# go.mod and go.sum must be tidy: `go mod tidy -diff` prints what tidying
# would change and fails (it needs the module proxy or a warm module cache).
vet:
	$(GO) mod tidy -diff
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l . ; echo "gofmt needed" >&2; exit 1; }

# -race always; fuzz targets run their seed corpus as plain tests.
unit:
	$(GO) test -race -count=1 -timeout 15m ./...

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
