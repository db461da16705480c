#!/usr/bin/env bash
# bench/redis.sh measures sluice's Redis store against a real redis-server
# it starts on a free loopback port (never 6379). In one run, in
# alternating rounds (the order reversed every other round):
#
#   floor   a trivial INCR+PEXPIRE Lua script through rueidis, 64 callers:
#           the most decisions per second one script per decision allows
#   hot     store/redis (Redis TIME), 64 callers on one key, gcra with a
#           rate so high that every decision is allowed and writes
#   keys    the same on 100,000 keys
#
# all driven by bench/tools/redisbench; then the gateway's allowed path
# with the Redis store against the memory store, and with the Redis store
# leasing a hot caller's quota (store.redis.lease, max 10 and 100), each
# with the script calls Redis ran per request (INFO commandstats), wrk, the
# same alternation. Then the gossip store (gossip_bench): two `sluice serve`
# instances on store type gossip, wrk on both at once, and what two others
# admit of a limit of 100/h against limit + (instances − 1) × max_unsynced.
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
# REDIS_CONNS (wrk -c, default 64; the gossip instances take half each). About
# 4 minutes with the defaults.
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

# gossip_config FILE LISTEN ADMIN BIND JOIN INTERVAL MAX_UNSYNCED RATE writes
# an instance on store type gossip gossiping on 127.0.0.1:BIND and joining
# 127.0.0.1:JOIN, with sluice_yaml's client and one fixed_window rule.
gossip_config() {
	sluice_yaml "$1" "$2" "$3" "$up_port" \
		"{type: gossip, gossip: {bind: 127.0.0.1:$4, join: [127.0.0.1:$5], interval: $6, max_unsynced: $7}}" fixed_window "$8"
}

# low_port is free_port below Linux's ephemeral ports (32768 on): the
# gossip's own connections take many of those, and one taken between
# free_port and a bind makes the bind fail.
low_port() {
	until free_port && ((port < 32768)); do :; done
}

# gossip_pair NAME INTERVAL MAX_UNSYNCED RATE starts two instances on the
# gossip store joining each other, sets gp (their listen ports) and waits
# until each counts both as members.
gossip_pair() {
	local i g=() a=()
	gp=()
	for i in 0 1; do
		low_port && gp+=("$port")
		low_port && a+=("$port")
		low_port && g+=("$port")
	done
	for i in 0 1; do
		gossip_config "$tmp/$1$i.yaml" "${gp[i]}" "${a[i]}" "${g[i]}" "${g[1 - i]}" "$2" "$3" "$4"
		"$tmp/sluice" serve --config "$tmp/$1$i.yaml" 2>"$tmp/sluice-$1$i.log" &
		pids+=($!)
	done
	for i in 0 1; do
		wait_port "${gp[i]}"
		local n
		for ((n = 0; n < 200; n++)); do
			[[ $(curl -s "http://127.0.0.1:${a[i]}/metrics" | awk '$1 == "sluice_gossip_members" {print $2}') == 2 ]] && break
			sleep 0.05
		done
		((n < 200)) || {
			echo "redis: gossip instance $1$i never saw its peer:" >&2
			tail -n 5 "$tmp/sluice-$1$i.log" >&2
			exit 1
		}
	done
}

# wrk_both SECONDS runs wrk (1 thread, conns/2 connections) on both
# instances of gp at once and sets rps (the sum), total and ok (2xx
# answers), over both.
wrk_both() {
	local i w=()
	for i in 0 1; do
		wrk -t1 -c"$((conns / 2))" -d"$1s" -H 'X-API-Key: key-a' "http://127.0.0.1:${gp[i]}/" >"$tmp/wrk-gossip$i.out" &
		w+=($!)
	done
	wait "${w[@]}"
	rps=$(awk '/^Requests\/sec:/ {s += $2} END {print s}' "$tmp"/wrk-gossip[01].out)
	total=$(awk '/requests in/ {s += $1} END {print s}' "$tmp"/wrk-gossip[01].out)
	ok=$(awk '/requests in/ {s += $1} /Non-2xx or 3xx responses:/ {s -= $NF} END {print s}' "$tmp"/wrk-gossip[01].out)
}

# gossip_bench measures the gateway on the gossip store: two instances,
# one caller on both at once, a rate nothing reaches (interval 50ms,
# max_unsynced 1000: an instance admits a burst of up to 1000 beyond what
# the other acknowledged), REDIS_ROUNDS runs of wrk; then two others with a
# limit of 100/h and max_unsynced 5, hammered for REDIS_WRK_DURATION
# seconds: admitted against the limit and the bound 100 + 1 × 5.
gossip_bench() {
	local r
	gossip_pair gossip 50ms 1000 1000000000/s
	for ((r = 1; r <= rounds; r++)); do
		wrk_both "$wrk_duration"
		echo "$rps" >>"$tmp/gw_gossip.rps"
		awk -v o="$ok" -v n="$total" 'BEGIN { printf "%.4f\n", o / n }' >>"$tmp/gw_gossip.ok"
		printf 'redis: gateway on gossip %10.0f req/s (2 instances), %d of %d admitted\n' "$rps" "$ok" "$total" >&2
		sleep 1
	done
	gossip_pair bound 50ms 5 100/h
	wrk_both "$wrk_duration"
	gossip_admitted=$ok gossip_asked=$total
	printf 'redis: gossip, limit 100/h, max_unsynced 5: %d of %d admitted (bound 105)\n' "$ok" "$total" >&2
}
gossip_bench

printf '%-14s %14s %12s %12s\n' benchmark "median dec/s" "p50 ms" "p99 ms"
for m in "${modes[@]}"; do
	printf '%-14s %14.0f %12.3f %12.3f\n' "$m" "$(median "$tmp/$m.decisions")" "$(median "$tmp/$m.p50")" "$(median "$tmp/$m.p99")"
done
printf '%-14s %14s %18s\n' gateway "median req/s" "script calls/req"
for st in "${stores[@]}"; do
	printf '%-14s %14.0f %18.4f\n' "$st" "$(median "$tmp/gw_$st.rps")" "$(median "$tmp/gw_$st.calls")"
done
printf '%-14s %14.0f %18s   (2 instances; %.0f%% admitted; of a limit of 100/h: %d admitted of %d, bound 105)\n' gossip \
	"$(median "$tmp/gw_gossip.rps")" - "$(median "$tmp/gw_gossip.ok" | awk '{print $1 * 100}')" "$gossip_admitted" "$gossip_asked"
echo "(gateway on redis: ${degraded:-0} of $requests decisions made without Redis)"
awk -v d="$(median "$tmp/hot.decisions")" -v f="$(median "$tmp/floor.decisions")" \
	-v k="$(median "$tmp/keys.decisions")" -v p="$(median "$tmp/hot.p99")" \
	-v gr="$(median "$tmp/gw_redis.rps")" -v gm="$(median "$tmp/gw_memory.rps")" \
	-v g10="$(median "$tmp/gw_lease10.rps")" -v g100="$(median "$tmp/gw_lease100.rps")" 'BEGIN {
	printf "redis: decisions=%.0f floor=%.0f ratio=%.2f keys100k=%.0f p99_ms=%.2f gateway_redis_vs_memory=%.2f lease10_vs_memory=%.2f lease100_vs_memory=%.2f\n",
		d, f, d / f, k, p, gr / gm, g10 / gm, g100 / gm
}'
