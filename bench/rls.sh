#!/usr/bin/env bash
# bench/rls.sh measures sluice as Envoy's rate limit service (decide.grpc)
# the way Envoy calls it: one gRPC connection, 64 calls in flight
# (bench/tools/rlsload), each call one descriptor, on one hot key and on
# 100,000 keys in turn. In one run, in alternating rounds (the order
# reversed every other round):
#
#   memory    sluice serve, decide.grpc on the memory store
#   redis     sluice serve, decide.grpc on a real redis-server (Redis TIME)
#   envoy     envoyproxy/ratelimit on the same Redis, built from the source
#             in $RATELIMIT_SRC (its defaults; skipped without it)
#   noop      a ShouldRateLimit server that answers OK at once (rlsload
#             -noop): the ceiling gRPC allows on this machine
#
# The rule file is one domain with one key-only descriptor at a rate no
# run reaches (1000000000 per second), so every call is decided and
# allowed. It prints a table of medians and, as its last line,
#
#   rls: decisions=<sluice redis, per s> envoy_ratelimit=<per s> ratio_envoy=<r> noop=<per s> ratio_noop=<sluice memory / noop> p99_ms=<sluice redis>
#
# A target's decisions per second is the median over every run of it,
# hot key and 100k keys together; p99_ms the median of sluice redis's
# runs' 99th percentiles. The machine may be shared: the figures are only
# comparable within one run. Run it from anywhere in the repository:
#
#   RATELIMIT_SRC=DIR bash bench/rls.sh
#
# Environment: RLS_ROUNDS (default 3), RLS_DURATION (seconds per run,
# default 4), RLS_CONCURRENCY (calls in flight, default 64). About 2
# minutes with the defaults.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${RLS_ROUNDS:-3} duration=${RLS_DURATION:-4} concurrency=${RLS_CONCURRENCY:-64}

name=rls
# shellcheck source=bench/lib.sh
source bench/lib.sh
install_missing redis-server:redis-server redis-cli:redis-tools

echo "rls: building sluice and rlsload" >&2
go build -o "$tmp/sluice" ./cmd/sluice
go build -o "$tmp/rlsload" ./bench/tools/rlsload
src=${RATELIMIT_SRC:-}
if [[ -n $src && -d $src/src/service_cmd ]]; then
	echo "rls: building envoyproxy/ratelimit from $src" >&2
	(cd "$src" && GOTOOLCHAIN=local go build -o "$tmp/ratelimit" ./src/service_cmd)
else
	echo "rls: RATELIMIT_SRC is not set to envoyproxy/ratelimit's source: envoy_ratelimit=0, not measured" >&2
	src=
fi

free_port && redis_port=$port
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" \
	--protected-mode yes --daemonize no >"$tmp/redis.log" 2>&1 &
pids+=($!)
wait_port "$redis_port"

mkdir -p "$tmp/rules" "$tmp/rt/ratelimit/config"
cat >"$tmp/rules/bench.yaml" <<YAML
domain: bench
descriptors:
  - key: key
    rate_limit: {unit: second, requests_per_unit: 1000000000}
YAML
cp "$tmp/rules/bench.yaml" "$tmp/rt/ratelimit/config/"

declare -A addr
for st in memory redis; do
	free_port && grpc_port=$port
	free_port && admin_port=$port
	store="{type: memory}"
	[[ $st == redis ]] && store="{type: redis, redis: {addrs: [127.0.0.1:$redis_port]}}"
	cat >"$tmp/$st.yaml" <<YAML
decide: {grpc: 127.0.0.1:$grpc_port, envoy_config: [rules]}
admin: 127.0.0.1:$admin_port
store: $store
rules: []
YAML
	"$tmp/sluice" serve --config "$tmp/$st.yaml" 2>"$tmp/sluice-$st.log" &
	pids+=($!)
	addr[$st]=127.0.0.1:$grpc_port
	wait_port "$grpc_port"
done
free_port && noop_port=$port
"$tmp/rlsload" -noop "127.0.0.1:$noop_port" 2>"$tmp/noop.log" &
pids+=($!)
addr[noop]=127.0.0.1:$noop_port
wait_port "$noop_port"
targets=(memory redis noop)
# start_envoy starts envoyproxy/ratelimit on fresh ports, or fails (1) if
# it exits: a port free when chosen may be taken meanwhile, by another
# program's outgoing connection or its own to Redis, made before it binds.
start_envoy() {
	local p i envoy_port http_port debug_port
	free_port && envoy_port=$port
	free_port && http_port=$port
	free_port && debug_port=$port
	RUNTIME_ROOT=$tmp/rt RUNTIME_SUBDIRECTORY=ratelimit RUNTIME_WATCH_ROOT=false USE_STATSD=false \
		REDIS_SOCKET_TYPE=tcp REDIS_URL=127.0.0.1:$redis_port LOG_LEVEL=warn \
		HOST=127.0.0.1 PORT=$http_port DEBUG_HOST=127.0.0.1 DEBUG_PORT=$debug_port GRPC_HOST=127.0.0.1 GRPC_PORT=$envoy_port \
		"$tmp/ratelimit" >>"$tmp/ratelimit.log" 2>&1 &
	p=$!
	for ((i = 0; i < 200; i++)); do
		kill -0 "$p" 2>/dev/null || return 1
		if (exec 3<>"/dev/tcp/127.0.0.1/$envoy_port") 2>/dev/null; then
			pids+=("$p")
			addr[envoy]=127.0.0.1:$envoy_port
			return 0
		fi
		sleep 0.05
	done
	kill "$p" 2>/dev/null || true
	return 1
}
if [[ -n $src ]]; then
	start_envoy || start_envoy || start_envoy || { echo "rls: envoyproxy/ratelimit did not start:" >&2; tail -n 5 "$tmp/ratelimit.log" >&2; exit 1; }
	targets+=(envoy)
fi

# run TARGET KEYS drives TARGET once and appends its calls per second and
# p99 (ms) to $tmp/TARGET.dps and .p99.
run() {
	local line
	line=$("$tmp/rlsload" -addr "${addr[$1]}" -concurrency "$concurrency" -keys "$2" -duration "${duration}s")
	printf 'rls: %-6s keys=%-6s %s\n' "$1" "$2" "$line" >&2
	awk -v dps="$tmp/$1.dps" -v p99="$tmp/$1.p99" '{
		for (i = 1; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == "per_s") print kv[2] >>dps
			if (kv[1] == "p99_ms") print kv[2] >>p99
			if ((kv[1] == "errors" || kv[1] == "over_limit") && kv[2] != 0) bad = 1
		}
	} END { exit bad }' <<<"$line" || echo "rls: warning: $1 answered errors or OVER_LIMIT: $line" >&2
}

for ((r = 1; r <= rounds; r++)); do
	echo "rls: round $r of $rounds" >&2
	order "$r" "${targets[@]}"
	for t in "${order[@]}"; do
		run "$t" 1
		run "$t" 100000
	done
done

printf '%-8s %14s %10s\n' target "median dec/s" "p99 ms"
for t in "${targets[@]}"; do printf '%-8s %14.0f %10.3f\n' "$t" "$(median "$tmp/$t.dps")" "$(median "$tmp/$t.p99")"; done
envoy=0
[[ -n $src ]] && envoy=$(median "$tmp/envoy.dps")
[[ -n $src ]] || echo "(envoy_ratelimit=0: RATELIMIT_SRC was not given, envoyproxy/ratelimit was not measured)"
awk -v d="$(median "$tmp/redis.dps")" -v e="$envoy" -v n="$(median "$tmp/noop.dps")" \
	-v m="$(median "$tmp/memory.dps")" -v p="$(median "$tmp/redis.p99")" 'BEGIN {
	re = (e > 0) ? d / e : 0
	printf "rls: decisions=%.0f envoy_ratelimit=%.0f ratio_envoy=%.2f noop=%.0f ratio_noop=%.2f p99_ms=%.2f\n",
		d, e, re, n, m / n, p
}'
