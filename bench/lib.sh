# bench/lib.sh: what the benchmark scripts share. Source it after setting
# `name` (the target, used in messages); it makes $tmp, removes it and stops
# every process in the pids array on exit.

# install_missing CMD:PKG... installs the Debian packages of the commands
# not found (commands under /usr/sbin count too).
install_missing() {
	local pkgs=() cmd pkg pair
	for pair in "$@"; do
		cmd=${pair%%:*} pkg=${pair#*:}
		command -v "$cmd" >/dev/null 2>&1 || [[ -x /usr/sbin/$cmd ]] || pkgs+=("$pkg")
	done
	if ((${#pkgs[@]} > 0)); then
		echo "$name: installing ${pkgs[*]}" >&2
		# No service may start on install (nginx would listen on *:80, redis
		# on 6379): policy-rc.d answering 101 forbids it, as in containers.
		local made=false
		if [[ ! -e /usr/sbin/policy-rc.d ]]; then
			printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && made=true
		fi
		local ok=true
		apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >&2 || ok=false
		if $made; then rm -f /usr/sbin/policy-rc.d; fi
		$ok
	fi
}

tmp=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# free_port sets port to a loopback port nothing listens on and no earlier
# call returned, in 20000..31999 (never 6379 or 80).
taken=" "
free_port() {
	local i
	for ((i = 0; i < 500; i++)); do
		# Below the kernel's ephemeral range (ip_local_port_range, 32768 on
		# by default), whose ports any outgoing connection on the machine
		# may take between this check and the server's bind.
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

# wait_port waits until something listens on 127.0.0.1:$1 (10 s at most).
wait_port() {
	local i
	for ((i = 0; i < 200; i++)); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	echo "$name: nothing listens on 127.0.0.1:$1; logs in $tmp:" >&2
	tail -n 20 "$tmp"/*.log >&2 || true
	return 1
}

# order ROUND NAME... sets the array order to the names, reversed in even
# rounds, so that no target always runs first.
order() {
	local r=$1 i
	shift
	order=("$@")
	if ((r % 2 == 0)); then
		order=()
		for ((i = $#; i >= 1; i--)); do order+=("${!i}"); done
	fi
}

# status PORT prints the HTTP status of GET / on 127.0.0.1:PORT as
# partner-a (key-a, the client of sluice_yaml).
status() {
	curl -s -o /dev/null -w '%{http_code}' -H 'X-API-Key: key-a' "http://127.0.0.1:$1/"
}

# wrk_run PORT THREADS CONNS SECONDS runs wrk once as partner-a against
# 127.0.0.1:PORT (over https when scheme is https) and sets rps (requests per second), p99 (ms), total
# (requests) and bad (answers not 2xx or 3xx).
wrk_run() {
	local out=$tmp/wrk.out
	wrk -t"$2" -c"$3" -d"$4s" --latency -H 'X-API-Key: key-a' "${scheme:-http}://127.0.0.1:$1/" >"$out"
	rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
	p99=$(awk '$1 == "99%" { v = $2
		if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 }
		else if (v ~ /ms$/) { sub(/ms$/, "", v) }
		else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 }
		print v }' "$out")
	total=$(awk '/requests in/ {print $1}' "$out")
	bad=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$out")
	bad=${bad:-0}
}

# wrk_record TARGET PORT runs wrk_run against PORT with $threads, $conns and
# $duration, appends its requests per second and p99 (ms) to
# $tmp/TARGET.rps and $tmp/TARGET.p99 and prints them.
wrk_record() {
	wrk_run "$2" "$threads" "$conns" "$duration"
	echo "$rps" >>"$tmp/$1.rps"
	echo "$p99" >>"$tmp/$1.p99"
	printf '%s: %-10s %10.0f req/s  p99 %s ms\n' "$name" "$1" "$rps" "$p99" >&2
}

# wrk_table TARGET... prints, from wrk_record's files, a table of each
# target's median, least and most requests per second and median p99.
wrk_table() {
	local t
	printf '%-12s %14s %14s %14s %12s\n' target "median req/s" "min req/s" "max req/s" "median p99"
	for t in "$@"; do
		printf '%-12s %14.0f %14.0f %14.0f %9.2f ms\n' "$t" "$(median "$tmp/$t.rps")" \
			"$(sort -g "$tmp/$t.rps" | head -1)" "$(sort -g "$tmp/$t.rps" | tail -1)" "$(median "$tmp/$t.p99")"
	done
}

# median [FILE] prints the median of the numbers in FILE (or standard
# input), one a line.
median() {
	sort -g "$@" | awk '{v[NR] = $1} END {
		if (NR == 0) { print "NaN"; exit }
		if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2
	}'
}

# sluice_yaml FILE LISTEN ADMIN UPSTREAM STORE ALGORITHM RATE writes a
# sluice configuration to FILE: callers on 127.0.0.1:LISTEN, admin on
# 127.0.0.1:ADMIN, the upstream at 127.0.0.1:UPSTREAM, the store STORE (a
# YAML flow mapping such as "{type: memory}"), one client (partner-a, key
# key-a) and one rule on every path keyed by client.
sluice_yaml() {
	cat >"$1" <<EOF
listen: 127.0.0.1:$2
upstream: http://127.0.0.1:$4
admin: 127.0.0.1:$3
store: $5
clients:
  key_header: X-API-Key
  unknown: reject
  list:
    - id: partner-a
      keys: [key-a]
rules:
  - name: bench
    match: { path: / }
    key: client
    algorithm: $6
    rate: $7
EOF
}

# start_nginx CONNECTIONS starts nginx_bin in the background (its pid in
# pids) with worker_connections CONNECTIONS, no access log, its files under
# $tmp and the upstream "up": 127.0.0.1:$up_port with 64 keep-alive
# connections. The rest of the http block (zones, servers) is read from
# stdin.
start_nginx() {
	mkdir -p "$tmp/nginx"
	{
		cat <<EOF
daemon off;
worker_processes auto;
pid $tmp/nginx.pid;
error_log $tmp/nginx-error.log crit;
events { worker_connections $1; }
http {
    access_log off;
    client_body_temp_path $tmp/nginx/body;
    proxy_temp_path $tmp/nginx/proxy;
    fastcgi_temp_path $tmp/nginx/fastcgi;
    uwsgi_temp_path $tmp/nginx/uwsgi;
    scgi_temp_path $tmp/nginx/scgi;
    upstream up {
        server 127.0.0.1:$up_port;
        keepalive 64;
    }
EOF
		cat # the zones and the servers
		echo "}"
	} >"$tmp/nginx.conf"
	"$nginx_bin" -e "$tmp/nginx-error.log" -c "$tmp/nginx.conf" -p "$tmp" 2>"$tmp/nginx.log" &
	pids+=($!)
}
