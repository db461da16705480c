#!/usr/bin/env bash
# bench/transport.sh measures HTTP/1.1 transports (module bench/transport)
# beside nginx on loopback with wrk, in one run, in alternating rounds:
#
#   429 answered at once: nginx_limit (limit_req exhausted, as
#   bench/gateway.sh), nginx_ret (return 429), sluice_rej (sluice serve,
#   fixed_window 1/d), fasthttp (fasthttp.Server defaults), fasthttp_gw
#   (the gateway's settings: 64 KiB read buffer), fasthttp_reduce
#   (fasthttp_gw with ReduceMemoryUsage), gnet (gnet/v2 loops feeding
#   fasthttp's header parser), nbio (nbhttp)
#   proxying to one nginx upstream (worker_processes 1, return 200):
#   nginx_proxy (proxy_pass, keepalive 64), sluice (allowed), p_fasthttp_gw,
#   p_fasthttp_reduce, p_nbio (each on a fasthttp.HostClient)
#
# then idle connections: for each server, fresh, the resident memory
# growth of IDLE_CONNS keep-alive connections after one request each, and
# how much of it came back 10 s after they closed (bench/transport/idleconns),
# and each server's KB per connection over nginx's (1 worker), in the same
# run (TRANSPORT_ROUNDS=0, or bench/run.sh idle: these rows alone); then
# the same over TLS (TLS 1.3, a self-signed ECDSA P-256 certificate made
# here): nginx_tls_w1 and sluice_tls_rej, the latter over the former.
#
#   bash bench/transport.sh
#
# Environment: TRANSPORT_ROUNDS (default 2), TRANSPORT_DURATION (seconds
# per wrk run, default 8; 0 rounds: the idle rows alone), IDLE_CONNS (default 10000), IDLE_SETTLE (seconds after closing, default 10). About 5 minutes.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${TRANSPORT_ROUNDS:-2} duration=${TRANSPORT_DURATION:-8} threads=2 conns=64
idle_conns=${IDLE_CONNS:-10000}
name=transport
# shellcheck source=bench/lib.sh
source bench/lib.sh
install_missing wrk:wrk nginx:nginx curl:curl
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
ulimit -n "$(ulimit -Hn)"

# free_port as lib.sh's, but below Linux's ephemeral range (32768 up):
# the idle rows' 10,000 client connections take ports there that a
# listener started meanwhile could not bind.
free_port() {
	local i
	for ((i = 0; i < 500; i++)); do
		port=$((20000 + RANDOM % 12000))
		[[ $taken == *" $port "* ]] && continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			taken+="$port "
			return 0
		fi
	done
	echo "$name: no free port" >&2
	return 1
}

echo "transport: building" >&2
go build -o "$tmp/sluice" ./cmd/sluice
(cd bench/transport && go build -o "$tmp/transport" . && go build -o "$tmp/idleconns" ./idleconns)

# nginx_run NAME WORKERS starts nginx on $tmp/NAME.conf (the http block's
# servers read from stdin) and sets pid to its master's.
nginx_run() {
	mkdir -p "$tmp/$1"
	{
		cat <<NGINX
daemon off;
worker_processes $2;
worker_rlimit_nofile 20000;
pid $tmp/$1.pid;
error_log $tmp/$1-error.log crit;
events { worker_connections 16384; }
http {
    access_log off;
    keepalive_requests 100000000;
    client_body_temp_path $tmp/$1/body;
    proxy_temp_path $tmp/$1/proxy;
    fastcgi_temp_path $tmp/$1/fastcgi;
    uwsgi_temp_path $tmp/$1/uwsgi;
    scgi_temp_path $tmp/$1/scgi;
NGINX
		cat
		echo "}"
	} >"$tmp/$1.conf"
	"$nginx_bin" -e "$tmp/$1-error.log" -c "$tmp/$1.conf" -p "$tmp" 2>"$tmp/$1.log" &
	pid=$!
	pids+=("$pid")
}

free_port && up_port=$port
nginx_run upstream 1 <<NGINX
    server { listen 127.0.0.1:$up_port; location / { default_type text/plain; return 200 "ok"; } }
NGINX

declare -A ports
free_port && ports[nginx_limit]=$port
free_port && ports[nginx_ret]=$port
free_port && ports[nginx_proxy]=$port
nginx_run nginx auto <<NGINX
    upstream up { server 127.0.0.1:$up_port; keepalive 64; }
    limit_req_zone \$http_x_api_key zone=closed:10m rate=1r/m;
    server { listen 127.0.0.1:${ports[nginx_limit]};
        location / { limit_req zone=closed burst=1 nodelay; limit_req_status 429; proxy_pass http://up; } }
    server { listen 127.0.0.1:${ports[nginx_ret]};
        location / { default_type text/plain; return 429 "too many requests\n"; } }
    server { listen 127.0.0.1:${ports[nginx_proxy]};
        location / { proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection ""; } }
NGINX

# sluice_start NAME ALGORITHM RATE [LINE] starts sluice serve as target
# NAME, LINE (such as a tls block) added to its configuration.
sluice_start() {
	free_port
	ports[$1]=$port
	free_port
	sluice_yaml "$tmp/$1.yaml" "${ports[$1]}" "$port" "$up_port" "{type: memory}" "$2" "$3"
	[[ -z ${4:-} ]] || echo "$4" >>"$tmp/$1.yaml"
	"$tmp/sluice" serve --config "$tmp/$1.yaml" 2>"$tmp/$1.log" &
	pid=$!
	pids+=("$pid")
}
sluice_start sluice_rej fixed_window 1/d
sluice_start sluice gcra 1000000000/s

# transport_start NAME SERVER [UPSTREAM] starts bench/transport as NAME.
transport_start() {
	free_port
	ports[$1]=$port
	"$tmp/transport" -server "$2" -addr "127.0.0.1:$port" ${3:+-upstream "$3"} >"$tmp/$1.log" 2>&1 &
	pid=$!
	pids+=("$pid")
}
for s in fasthttp fasthttp_gw fasthttp_reduce gnet nbio; do transport_start "$s" "${s//_/-}"; done
for s in fasthttp_gw fasthttp_reduce nbio; do transport_start "p_$s" "${s//_/-}" "127.0.0.1:$up_port"; done

for t in "${!ports[@]}"; do wait_port "${ports[$t]}"; done
for i in 1 2 3; do
	status "${ports[nginx_limit]}" >/dev/null
	status "${ports[sluice_rej]}" >/dev/null
done

rejecting=(nginx_limit nginx_ret sluice_rej fasthttp fasthttp_gw fasthttp_reduce gnet nbio)
proxying=(nginx_proxy sluice p_fasthttp_gw p_fasthttp_reduce p_nbio)
for t in "${rejecting[@]}"; do
	[[ $(status "${ports[$t]}") == 429 ]] || { echo "transport: $t does not answer 429" >&2; exit 1; }
done
for t in "${proxying[@]}"; do
	[[ $(status "${ports[$t]}") == 200 ]] || { echo "transport: $t does not answer 200" >&2; exit 1; }
done

for ((r = 1; r <= rounds; r++)); do
	echo "transport: round $r of $rounds, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	order "$r" "${rejecting[@]}" "${proxying[@]}"
	for t in "${order[@]}"; do
		wrk_record "$t" "${ports[$t]}"
		# limit_req at 1r/m lets a request through every minute.
		if [[ " ${rejecting[*]} " == *" $t "* ]]; then
			((bad * 1000 >= total * 999)) || echo "transport: warning: $t: only $bad of $total answers were 429" >&2
		else
			((bad == 0)) || echo "transport: warning: $t: $bad of $total answers were not 2xx" >&2
		fi
	done
done

# ratios BASE TARGET... prints the table of BASE and the targets, each
# with its median over BASE's.
ratios() {
	local base t b
	base=$(median "$tmp/$1.rps")
	printf '%-18s %12s %10s %8s  (ratio to %s)\n' target "median req/s" "p99 ms" ratio "$1"
	for t in "$@"; do
		b=$(median "$tmp/$t.rps")
		printf '%-18s %12.0f %10.2f %8.2f\n' "$t" "$b" "$(median "$tmp/$t.p99")" \
			"$(awk -v a="$b" -v b="$base" 'BEGIN {print a / b}')"
	done
}
if ((rounds > 0)); then
	echo "== 429 answered at once (wrk -t$threads -c$conns -d${duration}s, $rounds rounds)"
	ratios "${rejecting[@]}"
	echo "== proxying to one nginx upstream"
	ratios "${proxying[@]}"
fi

# Idle connections: each server fresh, all started before the first row
# (10,000 closed connections leave loopback ports a later listener could
# not bind), measured one after the other, each stopped after its row.
echo "== idle keep-alive connections ($idle_conns, one request each; RSS growth; given back ${IDLE_SETTLE:-10} s after closing)"
declare -A idle_pid
idle=(nginx_w1 nginx_w2 sluice_rej fasthttp fasthttp_gw fasthttp_reduce gnet nbio nginx_tls_w1 sluice_tls_rej)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
	-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout "$tmp/server.key" -out "$tmp/server.crt" 2>/dev/null
free_port
ports[idle_nginx_tls_w1]=$port
nginx_run idle_nginx_tls 1 <<NGINX
    server { listen 127.0.0.1:$port ssl; ssl_certificate $tmp/server.crt; ssl_certificate_key $tmp/server.key;
        location / { default_type text/plain; return 429 "too many requests\n"; } }
NGINX
idle_pid[nginx_tls_w1]=$pid
for w in 1 2; do
	free_port
	ports[idle_nginx_w$w]=$port
	nginx_run "idle_nginx$w" "$w" <<NGINX
    server { listen 127.0.0.1:$port; location / { default_type text/plain; return 429 "too many requests\n"; } }
NGINX
	idle_pid[nginx_w$w]=$pid
done
sluice_start idle_sluice_rej fixed_window 1/d
idle_pid[sluice_rej]=$pid
sluice_start idle_sluice_tls_rej fixed_window 1/d "tls: {cert: $tmp/server.crt, key: $tmp/server.key}"
idle_pid[sluice_tls_rej]=$pid
for s in fasthttp fasthttp_gw fasthttp_reduce gnet nbio; do
	transport_start "idle_$s" "${s//_/-}"
	idle_pid[$s]=$pid
done
for t in "${idle[@]}"; do
	pid=${idle_pid[$t]}
	if ! wait_port "${ports[idle_$t]}"; then
		echo "$t: did not start"
		continue
	fi
	idle_scheme=http tls=
	[[ $t == *tls* ]] && idle_scheme=https tls=-tls
	curl -k -s -o /dev/null -H 'X-API-Key: key-a' "$idle_scheme://127.0.0.1:${ports[idle_$t]}/"
	sleep 1
	printf '%-18s ' "$t"
	if "$tmp/idleconns" -addr "127.0.0.1:${ports[idle_$t]}" -pid "$pid" -n "$idle_conns" -settle "${IDLE_SETTLE:-10}s" $tls >"$tmp/idle_$t.out"; then
		per=$(sed -n 's/.*kb_per_conn=\([0-9.]*\).*/\1/p' "$tmp/idle_$t.out")
		base=nginx_w1
		[[ $t == *tls* ]] && base=nginx_tls_w1 # the TLS rows against nginx on TLS
		[[ $t == "$base" ]] && idle_base=$per
		printf '%s ratio_to_%s=%s\n' "$(cat "$tmp/idle_$t.out")" "$base" \
			"$(awk -v a="$per" -v b="${idle_base:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
	else
		echo "failed"
	fi
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
done
