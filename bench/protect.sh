#!/usr/bin/env bash
# bench/protect.sh measures how sluice's protect block keeps a saturated
# service within its objective, against nginx's limit_conn, both in front
# of one service of fixed capacity on loopback.
#
# The upstream is bench/tools/upstream -capacity C -service S (the model of
# internal/fixedcap): C workers, each request S of work, requests beyond C
# waiting in its own backlog, so its latency rises with every request
# beyond C while its throughput stays C/S. bench/tools/mixload offers 3×
# that throughput, open loop (a fixed rate whatever the answers): 20%
# critical (GET /claims/N), 40% normal (GET /history/N), 40% low (GET
# /exports/N). In one run, in alternating rounds (the order reversed every
# other round), it measures:
#
#   sluice  sluice serve with protect: max_in_flight C (the ceiling),
#           adaptive on (latency_target T), a queue (max_wait 1s), the
#           claims rule critical and the exports rule low
#   nginx   nginx with limit_conn at C on every request (one zone for the
#           server: nginx cannot tell the classes apart) and keepalive to
#           the same upstream
#
# and prints a table per target and class and, as its last line,
#
#   protect: critical_ok=<share> nginx_critical_ok=<share> critical_p99_ms=<ms> target_ms=<T> max_in_flight_seen=<n> ceiling=<C> low_shed=<share>
#
# critical_ok is the share of critical requests answered 2xx through sluice
# over all rounds (nginx_critical_ok the same through nginx);
# critical_p99_ms the median over the rounds of each round's p99 of those
# answers' latency (from sending to the end of the body, as the caller sees
# it: sluice's queue included; the median, as bench/gateway.sh's, smooths
# out what else the machine is doing; the table shows the worst round too);
# max_in_flight_seen the most requests the upstream had at once in any
# sluice round, as the upstream counted them; low_shed the share of low
# requests sluice refused. Targets: critical_ok >= 0.99,
# critical_p99_ms <= target_ms, max_in_flight_seen <= ceiling.
#
#   bash bench/protect.sh        (or bash bench/run.sh protect)
#
# Environment: PROTECT_ROUNDS (default 3), PROTECT_DURATION (seconds per
# run, default 10), PROTECT_CAPACITY (C, default 16), PROTECT_SERVICE_MS
# (S, default 100), PROTECT_TARGET_MS (T, default 500). About 70 seconds
# with the defaults: 160 requests a second of capacity, 480 offered.
#
# The caller's latency includes sluice's queue: with a fixed service time
# the upstream's workers finish in step, so a critical request that finds
# every slot taken waits up to one service time for the next batch; the
# objective is 5 service times, as a service whose work takes 100ms might
# promise 500ms. A service time this long keeps the machine's own hiccups
# (a shared machine stalls for tens of milliseconds) small beside it: they
# count as the upstream's latency, and the adaptive limit follows them.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${PROTECT_ROUNDS:-3} duration=${PROTECT_DURATION:-10}
capacity=${PROTECT_CAPACITY:-16} service_ms=${PROTECT_SERVICE_MS:-100} target_ms=${PROTECT_TARGET_MS:-500}
rate=$((3 * capacity * 1000 / service_ms)) # 3× the upstream's throughput

name=protect
# shellcheck source=bench/lib.sh
source bench/lib.sh
install_missing nginx:nginx curl:curl
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)

echo "protect: building sluice, the upstream and the load generator" >&2
go build -o "$tmp/sluice" ./cmd/sluice
go build -o "$tmp/upstream" ./bench/tools/upstream
go build -o "$tmp/mixload" ./bench/tools/mixload

free_port && up_port=$port
free_port && stats_port=$port
"$tmp/upstream" -addr "127.0.0.1:$up_port" -capacity "$capacity" -service "${service_ms}ms" \
	-stats "127.0.0.1:$stats_port" 2>"$tmp/upstream.log" &
pids+=($!)

free_port && sl_port=$port
free_port && admin_port=$port
cat >"$tmp/sluice.yaml" <<EOF
listen: 127.0.0.1:$sl_port
upstream: http://127.0.0.1:$up_port
admin: 127.0.0.1:$admin_port
protect:
  max_in_flight: $capacity          # the ceiling: the upstream's capacity
  adaptive:
    min_in_flight: $(((capacity + 3) / 4))
    latency_target: ${target_ms}ms
  queue:
    max_wait: 1s
    max_length: $((capacity * 16))
  shed_from: 0.8
rules:
  - name: claims
    match: { path: /claims, methods: [GET] }
    priority: critical
  - name: exports
    match: { path: /exports }
    priority: low
EOF
"$tmp/sluice" serve --config "$tmp/sluice.yaml" 2>"$tmp/sluice.log" &
pids+=($!)

free_port && ng_port=$port
start_nginx 8192 <<EOF
    limit_conn_zone \$server_name zone=upstream:1m;
    server {
        listen 127.0.0.1:$ng_port;
        server_name protect;
        location / {
            limit_conn upstream $capacity;
            limit_conn_status 503;
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
EOF

for p in "$up_port" "$stats_port" "$sl_port" "$ng_port"; do wait_port "$p"; done
for p in "$sl_port" "$ng_port"; do
	code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$p/claims/1")
	[[ $code == 200 ]] || { echo "protect: 127.0.0.1:$p answered $code, want 200" >&2; exit 1; }
done

declare -A ports=([sluice]=$sl_port [nginx]=$ng_port)

# run TARGET offers the load once through TARGET and appends mixload's
# lines, prefixed with the target, to $tmp/results.
run() {
	"$tmp/mixload" -url "http://127.0.0.1:${ports[$1]}" -rate "$rate" -duration "${duration}s" \
		-stats "http://127.0.0.1:$stats_port" >"$tmp/run.out"
	sed "s/^mixload: /$1 /" "$tmp/run.out" >>"$tmp/results"
	awk -v t="$1" '{ $1 = "protect: " t; print }' "$tmp/run.out" >&2
}

echo "protect: upstream capacity $capacity x ${service_ms}ms = $((capacity * 1000 / service_ms)) req/s; offered $rate req/s" >&2
: >"$tmp/results"
for ((r = 1; r <= rounds; r++)); do
	echo "protect: round $r of $rounds" >&2
	order "$r" sluice nginx
	for t in "${order[@]}"; do run "$t"; done
done

# The table and the last line: sums over the rounds per target and class,
# the median and the worst of the rounds' p99s, the most in flight at the
# upstream.
awk -v target_ms="$target_ms" -v ceiling="$capacity" '
function val(name,   i) { for (i = 1; i <= NF; i++) if (index($i, name "=") == 1) return substr($i, length(name) + 2); return 0 }
function median(k,   i, j, v, n, a) {
	n = split(p99s[k], a, " ")
	for (i = 2; i <= n; i++) { v = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > v; j--) a[j + 1] = a[j]; a[j + 1] = v }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
$2 ~ /^class=/ {
	t = $1; c = val("class"); k = t SUBSEP c
	sent[k] += val("sent"); ok[k] += val("ok"); refused[k] += val("refused"); failed[k] += val("failed"); skipped[k] += val("skipped")
	if (val("p99_ms") + 0 > worst[k]) worst[k] = val("p99_ms") + 0
	p99s[k] = p99s[k] " " val("p99_ms")
	if (!(k in seen)) { seen[k] = 1; keys[++n] = k }
}
$2 == "upstream" && val("max_in_flight") + 0 > maxif[$1] { maxif[$1] = val("max_in_flight") + 0 }
END {
	printf "%-7s %-9s %8s %8s %8s %8s %8s %11s %11s\n", "target", "class", "sent", "2xx", "refused", "failed", "skipped", "median p99", "worst p99"
	for (i = 1; i <= n; i++) {
		split(keys[i], p, SUBSEP)
		printf "%-7s %-9s %8d %8d %8d %8d %8d %8.1f ms %8.1f ms\n", p[1], p[2], sent[keys[i]], ok[keys[i]], refused[keys[i]],
			failed[keys[i]], skipped[keys[i]], median(keys[i]), worst[keys[i]]
	}
	printf "most in flight at the upstream: sluice %d, nginx %d (ceiling %d)\n", maxif["sluice"], maxif["nginx"], ceiling
	s = "sluice" SUBSEP "critical"; ng = "nginx" SUBSEP "critical"; lo = "sluice" SUBSEP "low"
	printf "protect: critical_ok=%.4f nginx_critical_ok=%.4f critical_p99_ms=%.1f target_ms=%d max_in_flight_seen=%d ceiling=%d low_shed=%.4f\n",
		ok[s] / sent[s], ok[ng] / sent[ng], median(s), target_ms, maxif["sluice"], ceiling, refused[lo] / sent[lo]
}' "$tmp/results"
