#!/usr/bin/env bash
# bench/redis.sh measures sluice's Redis store against a real redis-server
# it starts on a free loopback port (never 6379). In one run, in
# alternating rounds (the order reversed every other round):
#
#   floor   a trivial INCR+PEXPIRE Lua script through rueidis, 64 callers:
#           the most decisions per second one script per decision allows
#   hot     store/redisstore (Redis TIME), 64 callers on one key, gcra with a
#           rate so high that every decision is allowed and writes
#   keys    the same on 100,000 keys
#
# all driven by bench/tools/redisbench; then the gateway's allowed path
# with the Redis store against the memory store, and with the Redis store
# leasing a hot caller's quota (store.redis.lease, max 10 and 100), each
# with the script calls Redis ran per request (INFO commandstats), wrk, the
# same alternation.
# It prints a table of medians and, as its last line,
#
#   redis: decisions=<dps> floor=<dps> ratio=<r> keys100k=<dps> p99_ms=<ms> gateway_redis_vs_memory=<r>
#          lease10_vs_memory=<r> lease100_vs_memory=<r>
#
# decisions and p99_ms are the hot key's; ratio is decisions/floor. Run it
# from anywhere in the repository:
#
#   bash bench/redis.sh
#
# Environment: REDIS_ROUNDS (default 5), REDIS_DURATION (seconds per
# redisbench run, default 3), REDIS_WRK_DURATION (seconds per wrk run,
# default 4), REDIS_CONCURRENCY (redisbench callers, default 64),
# REDIS_CONNS (wrk -c, default 64). About 3 minutes with the defaults.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${REDIS_ROUNDS:-5} duration=${REDIS_DURATION:-3} wrk_duration=${REDIS_WRK_DURATION:-4}
concurrency=${REDIS_CONCURRENCY:-64} conns=${REDIS_CONNS:-64}

name=redis
# shellcheck source=bench/lib.sh
source bench/lib.sh
install_missing redis-server:redis-server redis-cli:redis-tools wrk:wrk curl:curl

echo "redis: building sluice, the upstream and redisbench" >&2
go build -o "$tmp/sluice" ./cmd/sluice
go build -o "$tmp/upstream" ./bench/tools/upstream
go build -o "$tmp/redisbench" ./bench/tools/redisbench

free_port && redis_port=$port
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" \
	--protected-mode yes --daemonize no >"$tmp/redis.log" 2>&1 &
pids+=($!)
wait_port "$redis_port"
for ((i = 0; i < 100; i++)); do
	[[ $(redis-cli -p "$redis_port" ping 2>/dev/null) == PONG ]] && break
	sleep 0.05
done
echo "redis: $(redis-server --version | awk '{print $3}') on 127.0.0.1:$redis_port" >&2

# bench MODE runs redisbench once and appends decisions/s, p50 and p99 (ms)
# to $tmp/MODE.dps, .p50 and .p99.
bench() {
	local line
	line=$("$tmp/redisbench" -addr "127.0.0.1:$redis_port" -mode "$1" -duration "${duration}s" \
		-concurrency "$concurrency" | tail -1)
	echo "$line" >&2
	for f in decisions p50_ms p99_ms; do
		awk -v f="$f" '{ for (i = 1; i <= NF; i++) if (index($i, f "=") == 1) print substr($i, length(f) + 2) }' \
			<<<"$line" >>"$tmp/$1.${f%_ms}"
	done
}

modes=(floor hot keys)
for ((r = 1; r <= rounds; r++)); do
	echo "redis: decisions, round $r of $rounds" >&2
	order "$r" "${modes[@]}"
	for m in "${order[@]}"; do bench "$m"; done
done

# The gateway on each store: one rule, gcra at a rate nothing reaches.
free_port && up_port=$port
"$tmp/upstream" -addr "127.0.0.1:$up_port" 2>"$tmp/upstream.log" &
pids+=($!)
declare -A gw_port admin_port
stores=(memory redis lease10 lease100)
for st in "${stores[@]}"; do
	free_port && gw_port[$st]=$port
	free_port && admin_port[$st]=$port
	store="{type: memory}"
	[[ $st == redis ]] && store="{type: redis, redis: {addrs: [127.0.0.1:$redis_port]}}"
	# Leased quota (store.redis.lease): a hot caller's units taken 10 or 100 at a time.
	[[ $st == lease* ]] && store="{type: redis, redis: {addrs: [127.0.0.1:$redis_port], lease: {max: ${st#lease}}}}"
	sluice_yaml "$tmp/$st.yaml" "${gw_port[$st]}" "${admin_port[$st]}" "$up_port" "$store" gcra 1000000000/s
	"$tmp/sluice" serve --config "$tmp/$st.yaml" 2>"$tmp/sluice-$st.log" &
	pids+=($!)
done
wait_port "$up_port"
for st in "${stores[@]}"; do
	wait_port "${gw_port[$st]}"
	code=$(status "${gw_port[$st]}")
	[[ $code == 200 ]] || { echo "redis: the gateway on $st answered $code, want 200" >&2; exit 1; }
done

# gw STORE runs wrk once against the gateway on STORE and appends its
# requests per second to $tmp/gw_STORE.rps and its request count to
# $tmp/gw_STORE.n.
gw() {
	local calls
	calls=$(script_calls)
	wrk_run "${gw_port[$1]}" 2 "$conns" "$wrk_duration"
	echo "$rps" >>"$tmp/gw_$1.rps"
	echo "$total" >>"$tmp/gw_$1.n"
	awk -v c="$(($(script_calls) - calls))" -v n="$total" 'BEGIN { printf "%.4f\n", c / n }' >>"$tmp/gw_$1.calls"
	((bad * 1000 <= total)) || echo "redis: warning: gateway on $1: $bad of $total answers were not 2xx" >&2
	printf 'redis: gateway on %-6s %10.0f req/s\n' "$1" "$rps" >&2
}

# script_calls prints the EVAL and EVALSHA calls Redis has run.
script_calls() {
	redis-cli -p "$redis_port" info commandstats |
		awk -F'[=,:]' '/^cmdstat_eval(sha)?:/ { s += $3 } END { print s + 0 }'
}

# When wrk stops, the requests in flight are cancelled; the gateway counts
# a cancelled Redis call as a store failure, and a few in a row open the
# failover circuit, whose decisions skip Redis until a probe succeeds
# (every 500ms). The pause after each run lets the circuit close before the
# next one, and the count of such decisions is reported.
for ((r = 1; r <= rounds; r++)); do
	echo "redis: gateway, round $r of $rounds" >&2
	order "$r" "${stores[@]}"
	for st in "${order[@]}"; do
		gw "$st"
		sleep 1
		status "${gw_port[$st]}" >/dev/null # a probe, if one is due
	done
done
degraded=$(curl -s "http://127.0.0.1:${admin_port[redis]}/metrics" |
	awk '$1 == "sluice_store_degraded_decisions_total" {print $2}')
requests=$(awk '{s += $1} END {print s}' "$tmp/gw_redis.n")
if [[ ${degraded:-0} != 0 ]]; then
	echo "redis: warning: the gateway on redis made $degraded of its $requests decisions without Redis (store failures, on_failure: open):" >&2
	grep -m 3 '"store failed"' "$tmp/sluice-redis.log" >&2 || true
fi

printf '%-14s %14s %12s %12s\n' benchmark "median dec/s" "p50 ms" "p99 ms"
for m in "${modes[@]}"; do
	printf '%-14s %14.0f %12.3f %12.3f\n' "$m" "$(median "$tmp/$m.decisions")" "$(median "$tmp/$m.p50")" "$(median "$tmp/$m.p99")"
done
printf '%-14s %14s %18s\n' gateway "median req/s" "script calls/req"
for st in "${stores[@]}"; do
	printf '%-14s %14.0f %18.4f\n' "$st" "$(median "$tmp/gw_$st.rps")" "$(median "$tmp/gw_$st.calls")"
done
echo "(gateway on redis: ${degraded:-0} of $requests decisions made without Redis)"
awk -v d="$(median "$tmp/hot.decisions")" -v f="$(median "$tmp/floor.decisions")" \
	-v k="$(median "$tmp/keys.decisions")" -v p="$(median "$tmp/hot.p99")" \
	-v gr="$(median "$tmp/gw_redis.rps")" -v gm="$(median "$tmp/gw_memory.rps")" \
	-v g10="$(median "$tmp/gw_lease10.rps")" -v g100="$(median "$tmp/gw_lease100.rps")" 'BEGIN {
	printf "redis: decisions=%.0f floor=%.0f ratio=%.2f keys100k=%.0f p99_ms=%.2f gateway_redis_vs_memory=%.2f lease10_vs_memory=%.2f lease100_vs_memory=%.2f\n",
		d, f, d / f, k, p, gr / gm, g10 / gm, g100 / gm
}'
