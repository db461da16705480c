#!/usr/bin/env bash
# bench/check.sh measures sluice's /check behind nginx (auth_request, the
# recipe of docs/decide.md) against nginx's own limit_req, both in front of
# one trivial upstream (bench/tools/upstream) on loopback, with wrk as the
# load. In one run, in alternating rounds (the order reversed every other
# round), it measures:
#
#   direct      wrk straight to the upstream (the ceiling)
#   check       nginx asking sluice serve's /check (the decision service
#               alone, memory store, one gcra rule so generous that every
#               request is allowed) before each request, keep-alive to both
#   limit_req   nginx limit_req keyed by X-API-Key at a huge rate
#
# and prints a table of medians and, as its last line,
#
#   check: nginx_check=<rps> nginx_limit_req=<rps> ratio=<r> direct=<rps> p99_ms=<ms> limit_req_p99_ms=<ms>
#
# where ratio is nginx_check/nginx_limit_req of the medians (information:
# auth_request adds a round trip per request that limit_req does not) and
# the p99s are wrk's (--latency). Run it from anywhere in the repository:
#
#   bash bench/check.sh
#
# Environment: CHECK_ROUNDS (default 3), CHECK_DURATION (seconds per wrk
# run, default 5), CHECK_THREADS and CHECK_CONNS (wrk -t and -c, default 2
# and 64). About 60 seconds with the defaults.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${CHECK_ROUNDS:-3} duration=${CHECK_DURATION:-5}
threads=${CHECK_THREADS:-2} conns=${CHECK_CONNS:-64}

name=check
# shellcheck source=bench/lib.sh
source bench/lib.sh
install_missing wrk:wrk nginx:nginx curl:curl
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)

echo "check: building sluice and the upstream" >&2
go build -o "$tmp/sluice" ./cmd/sluice
go build -o "$tmp/upstream" ./bench/tools/upstream

free_port && up_port=$port
"$tmp/upstream" -addr "127.0.0.1:$up_port" 2>"$tmp/upstream.log" &
pids+=($!)

free_port && check_port=$port
free_port && admin_port=$port
cat >"$tmp/sluice.yaml" <<EOF
decide:
  http: 127.0.0.1:$check_port
  http_deny_status: 403
admin: 127.0.0.1:$admin_port
trusted_proxies: [127.0.0.1]
clients:
  list:
    - id: partner-a
      keys: [key-a]
rules:
  - name: bench
    match: { path: / }
    key: client
    algorithm: gcra
    rate: 1000000000/s
EOF
"$tmp/sluice" serve --config "$tmp/sluice.yaml" 2>"$tmp/sluice.log" &
pids+=($!)

free_port && ngcheck_port=$port
free_port && nglimit_port=$port
start_nginx 4096 <<EOF
    limit_req_zone \$http_x_api_key zone=open:10m rate=100000000r/s;
    upstream sluice_check {
        server 127.0.0.1:$check_port;
        keepalive 64;
    }
    server {
        listen 127.0.0.1:$ngcheck_port;
        location / {
            auth_request /_sluice_check;
            auth_request_set \$sluice_client \$upstream_http_x_sluice_client;
            auth_request_set \$sluice_policy \$upstream_http_ratelimit_policy;
            auth_request_set \$sluice_ratelimit \$upstream_http_ratelimit;
            auth_request_set \$sluice_retry_after \$upstream_http_retry_after;
            auth_request_set \$sluice_problem \$upstream_http_x_sluice_problem;
            error_page 403 = @sluice_limited;
            add_header RateLimit-Policy \$sluice_policy always;
            add_header RateLimit \$sluice_ratelimit always;
            proxy_set_header X-Sluice-Client \$sluice_client;
            proxy_set_header X-HTTP-Method-Override "";
            proxy_set_header X-HTTP-Method "";
            proxy_set_header X-Method-Override "";
            proxy_set_header X-Original-URL "";
            proxy_set_header X-Rewrite-URL "";
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
        location = /_sluice_check {
            internal;
            proxy_pass http://sluice_check/check;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Original-Method \$request_method;
            proxy_set_header X-Original-URI \$request_uri;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
        }
        location @sluice_limited {
            default_type application/problem+json;
            add_header Retry-After \$sluice_retry_after always;
            add_header RateLimit-Policy \$sluice_policy always;
            add_header RateLimit \$sluice_ratelimit always;
            return 429 \$sluice_problem;
        }
    }
    server {
        listen 127.0.0.1:$nglimit_port;
        location / {
            limit_req zone=open burst=1000 nodelay;
            limit_req_status 429;
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
EOF

for p in "$up_port" "$check_port" "$ngcheck_port" "$nglimit_port"; do wait_port "$p"; done
for p in "$ngcheck_port" "$nglimit_port"; do
	code=$(status "$p")
	[[ $code == 200 ]] || { echo "check: 127.0.0.1:$p answered $code, want 200" >&2; exit 1; }
done
curl -s -D - -o /dev/null -H 'X-API-Key: key-a' "http://127.0.0.1:$ngcheck_port/" | grep -qi '^ratelimit: "bench"' ||
	{ echo "check: nginx's answer carries no RateLimit from /check" >&2; exit 1; }

targets=(direct check limit_req)
declare -A ports=([direct]=$up_port [check]=$ngcheck_port [limit_req]=$nglimit_port)

# run TARGET runs wrk once against TARGET (wrk_record); it warns when
# answers were not 2xx.
run() {
	wrk_record "$1" "${ports[$1]}"
	((bad * 1000 <= total)) || echo "check: warning: $1: $bad of $total answers were not 2xx" >&2
}

for ((r = 1; r <= rounds; r++)); do
	echo "check: round $r of $rounds" >&2
	order "$r" "${targets[@]}"
	for t in "${order[@]}"; do run "$t"; done
done

wrk_table "${targets[@]}"
awk -v c="$(median "$tmp/check.rps")" -v l="$(median "$tmp/limit_req.rps")" -v d="$(median "$tmp/direct.rps")" \
	-v p="$(median "$tmp/check.p99")" -v lp="$(median "$tmp/limit_req.p99")" 'BEGIN {
	printf "check: nginx_check=%.0f nginx_limit_req=%.0f ratio=%.2f direct=%.0f p99_ms=%.2f limit_req_p99_ms=%.2f\n",
		c, l, c / l, d, p, lp
}'
