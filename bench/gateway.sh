#!/usr/bin/env bash
# bench/gateway.sh measures sluice as a gateway against nginx's limit_req,
# both in front of one trivial upstream (bench/tools/upstream) on loopback,
# with wrk as the load. In one run, in alternating rounds (the order
# reversed every other round), it measures:
#
#   direct          wrk straight to the upstream (the ceiling)
#   sluice          sluice serve, memory store, one gcra rule so generous
#                   that every request is allowed: the allowed path
#   sluice_prot     the allowed path with protect switched on (an in-flight
#                   limit of 1024 with a queue, never reached at 64
#                   connections): what admission costs every request
#   nginx           nginx limit_req keyed by X-API-Key at a huge rate,
#                   keepalive to the same upstream
#   sluice_rej      sluice with fixed_window 1/d: after the first request
#                   every answer is sluice's own 429
#   nginx_rej       nginx limit_req at 1r/m, exhausted: every answer is 429
#   sluice_tls      the allowed path with callers on TLS (tls: {cert, key};
#                   TLS 1.3, keep-alive: wrk's connections handshake once)
#   nginx_tls       nginx limit_req as nginx, on TLS with the same
#                   certificate (a self-signed ECDSA P-256 one made here)
#
# and prints a table of medians and, as its last line,
#
#   gateway: allowed=<rps> nginx_allowed=<rps> ratio_allowed=<r> rejected=<rps> nginx_rejected=<rps> ratio_rejected=<r> direct=<rps> p99_ms=<ms> nginx_p99_ms=<ms> protect=<rps> ratio_protect=<r> protect_p99_ms=<ms> tls=<rps> nginx_tls=<rps> ratio_tls=<r> tls_p99_ms=<ms> nginx_tls_p99_ms=<ms>
#
# where the ratios are sluice/nginx of the medians and the p99s are wrk's
# (--latency) on the allowed paths. The gateway on the Redis store is
# bench/redis.sh's line (bench/run.sh redis). Run it from anywhere in the
# repository:
#
#   bash bench/gateway.sh
#
# Environment: GATEWAY_ROUNDS (default 3), GATEWAY_DURATION (seconds per
# wrk run, default 5), GATEWAY_THREADS and GATEWAY_CONNS (wrk -t and -c,
# default 2 and 64), GATEWAY_TARGETS (the targets to run, such as
# "sluice_tls nginx_tls"; then only their table is printed), GATEWAY_BASE
# (a git revision: its sluice is built too and measured on the allowed and
# rejected paths as the rows base and base_rej, in the same rounds, to
# show what a change did to them; a second closing line, gateway: base=REV
# base_allowed= ratio_base_allowed= base_rejected= ratio_base_rejected=). About 125 seconds with the defaults.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${GATEWAY_ROUNDS:-3} duration=${GATEWAY_DURATION:-5}
threads=${GATEWAY_THREADS:-2} conns=${GATEWAY_CONNS:-64}

name=gateway
# shellcheck source=bench/lib.sh
source bench/lib.sh
install_missing wrk:wrk nginx:nginx curl:curl openssl:openssl
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)

echo "gateway: building sluice and the upstream" >&2
go build -o "$tmp/sluice" ./cmd/sluice
go build -o "$tmp/upstream" ./bench/tools/upstream
if [[ -n ${GATEWAY_BASE:-} ]]; then
	echo "gateway: building sluice at $GATEWAY_BASE" >&2
	git worktree add -q --detach "$tmp/base-src" "$GATEWAY_BASE"
	(cd "$tmp/base-src" && go build -o "$tmp/sluice-base" ./cmd/sluice)
	git worktree remove --force "$tmp/base-src"
fi

free_port && up_port=$port
"$tmp/upstream" -addr "127.0.0.1:$up_port" 2>"$tmp/upstream.log" &
pids+=($!)

# sluice_config NAME ALGORITHM RATE writes $tmp/NAME.yaml: the memory store,
# one client (key-a) and one rule on every path keyed by client. It sets
# listen to the port sluice will serve callers on.
sluice_config() {
	free_port
	listen=$port
	free_port
	sluice_yaml "$tmp/$1.yaml" "$listen" "$port" "$up_port" "{type: memory}" "$2" "$3"
}
sluice_config allowed gcra 1000000000/s
sl_port=$listen
sluice_config rejected fixed_window 1/d
rej_port=$listen
sluice_config protected gcra 1000000000/s
prot_port=$listen
sluice_config tls gcra 1000000000/s
tls_port=$listen
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
	-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout "$tmp/server.key" -out "$tmp/server.crt" 2>/dev/null
echo "tls: {cert: $tmp/server.crt, key: $tmp/server.key}" >>"$tmp/tls.yaml"
cat >>"$tmp/protected.yaml" <<EOF
protect:
  max_in_flight: 1024
  queue: { max_wait: 1s, max_length: 1000 }
EOF
for cfg in allowed rejected protected tls; do
	"$tmp/sluice" serve --config "$tmp/$cfg.yaml" 2>"$tmp/sluice-$cfg.log" &
	pids+=($!)
done
base_ports=()
if [[ -n ${GATEWAY_BASE:-} ]]; then
	sluice_config base gcra 1000000000/s
	base_port=$listen
	sluice_config base_rej fixed_window 1/d
	base_rej_port=$listen
	base_ports=("$base_port" "$base_rej_port")
	for cfg in base base_rej; do
		"$tmp/sluice-base" serve --config "$tmp/$cfg.yaml" 2>"$tmp/sluice-$cfg.log" &
		pids+=($!)
	done
fi

free_port && ng_port=$port
free_port && ngrej_port=$port
free_port && ngtls_port=$port
start_nginx 4096 <<EOF
    limit_req_zone \$http_x_api_key zone=open:10m rate=100000000r/s;
    limit_req_zone \$http_x_api_key zone=closed:10m rate=1r/m;
    server {
        listen 127.0.0.1:$ng_port;
        location / {
            limit_req zone=open burst=1000 nodelay;
            limit_req_status 429;
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
    server {
        listen 127.0.0.1:$ngtls_port ssl;
        ssl_certificate $tmp/server.crt;
        ssl_certificate_key $tmp/server.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        location / {
            limit_req zone=open burst=1000 nodelay;
            limit_req_status 429;
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
    server {
        listen 127.0.0.1:$ngrej_port;
        location / {
            limit_req zone=closed burst=1 nodelay;
            limit_req_status 429;
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
EOF

for p in "$up_port" "$sl_port" "$rej_port" "$prot_port" "$ng_port" "$ngrej_port" "$tls_port" "$ngtls_port" "${base_ports[@]}"; do wait_port "$p"; done

# exhaust PORT sends requests until one is answered 429 (20 at most).
exhaust() {
	local i
	for ((i = 0; i < 20; i++)); do
		[[ $(status "$1") == 429 ]] && return 0
	done
	echo "gateway: 127.0.0.1:$1 never answered 429" >&2
	return 1
}
exhaust "$rej_port"
exhaust "$ngrej_port"
[[ -z ${GATEWAY_BASE:-} ]] || exhaust "$base_rej_port"
for p in "$sl_port" "$prot_port" "$ng_port" ${GATEWAY_BASE:+"$base_port"}; do
	code=$(status "$p")
	[[ $code == 200 ]] || { echo "gateway: 127.0.0.1:$p answered $code, want 200" >&2; exit 1; }
done
for p in "$tls_port" "$ngtls_port"; do
	code=$(curl -s --cacert "$tmp/server.crt" -o /dev/null -w '%{http_code}' -H 'X-API-Key: key-a' "https://127.0.0.1:$p/")
	[[ $code == 200 ]] || { echo "gateway: https://127.0.0.1:$p answered $code, want 200" >&2; exit 1; }
done

targets=(direct sluice sluice_prot nginx sluice_rej nginx_rej sluice_tls nginx_tls)
declare -A ports=([direct]=$up_port [sluice]=$sl_port [sluice_prot]=$prot_port [nginx]=$ng_port [sluice_rej]=$rej_port
	[nginx_rej]=$ngrej_port [sluice_tls]=$tls_port [nginx_tls]=$ngtls_port)
if [[ -n ${GATEWAY_BASE:-} ]]; then
	targets+=(base base_rej)
	ports[base]=$base_port ports[base_rej]=$base_rej_port
fi
all=true
if [[ -n ${GATEWAY_TARGETS:-} ]]; then
	read -ra targets <<<"$GATEWAY_TARGETS"
	all=false
fi

# run TARGET runs wrk once against TARGET (wrk_record). It warns when an
# allowed path answered anything but 2xx, or a rejected one anything but
# 429 (wrk counts both as non-2xx).
run() {
	scheme=http
	[[ $1 == *_tls ]] && scheme=https
	wrk_record "$1" "${ports[$1]}"
	if [[ $1 == *_rej ]]; then
		((bad * 100 >= total * 99)) || echo "gateway: warning: $1: only $bad of $total answers were rejections" >&2
	else
		((bad * 1000 <= total)) || echo "gateway: warning: $1: $bad of $total answers were not 2xx" >&2
	fi
}

for ((r = 1; r <= rounds; r++)); do
	echo "gateway: round $r of $rounds" >&2
	order "$r" "${targets[@]}"
	for t in "${order[@]}"; do run "$t"; done
done

wrk_table "${targets[@]}"
$all || exit 0
awk -v a="$(median "$tmp/sluice.rps")" -v na="$(median "$tmp/nginx.rps")" \
	-v j="$(median "$tmp/sluice_rej.rps")" -v nj="$(median "$tmp/nginx_rej.rps")" \
	-v d="$(median "$tmp/direct.rps")" -v p="$(median "$tmp/sluice.p99")" -v np="$(median "$tmp/nginx.p99")" \
	-v pr="$(median "$tmp/sluice_prot.rps")" -v pp="$(median "$tmp/sluice_prot.p99")" \
	-v t="$(median "$tmp/sluice_tls.rps")" -v nt="$(median "$tmp/nginx_tls.rps")" \
	-v tp="$(median "$tmp/sluice_tls.p99")" -v ntp="$(median "$tmp/nginx_tls.p99")" 'BEGIN {
	printf "gateway: allowed=%.0f nginx_allowed=%.0f ratio_allowed=%.2f rejected=%.0f nginx_rejected=%.0f ratio_rejected=%.2f direct=%.0f p99_ms=%.2f nginx_p99_ms=%.2f protect=%.0f ratio_protect=%.2f protect_p99_ms=%.2f tls=%.0f nginx_tls=%.0f ratio_tls=%.2f tls_p99_ms=%.2f nginx_tls_p99_ms=%.2f\n",
		a, na, a / na, j, nj, j / nj, d, p, np, pr, pr / na, pp, t, nt, t / nt, tp, ntp
}'
[[ -z ${GATEWAY_BASE:-} ]] || awk -v a="$(median "$tmp/sluice.rps")" -v b="$(median "$tmp/base.rps")" \
	-v j="$(median "$tmp/sluice_rej.rps")" -v bj="$(median "$tmp/base_rej.rps")" -v rev="$GATEWAY_BASE" 'BEGIN {
	printf "gateway: base=%s base_allowed=%.0f ratio_base_allowed=%.2f base_rejected=%.0f ratio_base_rejected=%.2f\n", rev, b, a / b, bj, j / bj
}'
