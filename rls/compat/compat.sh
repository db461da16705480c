#!/usr/bin/env bash
# rls/compat/compat.sh (make compat RATELIMIT_SRC=DIR) runs
# envoyproxy/ratelimit, built from its source in $RATELIMIT_SRC, and sluice
# side by side on that service's own rule files (examples/ratelimit/config
# and test/config): both asked the same ShouldRateLimit questions (see
# rls/compat/main.go), their answers printed side by side, and for the
# files that service refuses, whether sluice refuses them too. Each file
# gets fresh servers: envoyproxy/ratelimit on its own Redis, sluice on its
# memory store. With COMPAT_RECORD=DIR it also writes each accepted file
# and envoyproxy/ratelimit's answers (FILE.answers) to DIR: rls's
# TestCompatTables replays them in make test (rls/testdata/compat); this
# script is not part of make test.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
name=compat
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh" # $tmp, pids cleaned up on exit, free_port, wait_port

src=${RATELIMIT_SRC:-}
if [[ -z $src || ! -d $src/src/service_cmd ]]; then
	echo "compat: set RATELIMIT_SRC to a checkout of github.com/envoyproxy/ratelimit (it has src/service_cmd)" >&2
	exit 2
fi
install_missing redis-server:redis-server

echo "compat: building envoyproxy/ratelimit, sluice and the compat client" >&2
(cd "$src" && GOTOOLCHAIN=local go build -o "$tmp/ratelimit" ./src/service_cmd && go build -o "$tmp/config_check" ./src/config_check_cmd)
(cd "$root" && go build -o "$tmp/sluice" ./cmd/sluice && go build -o "$tmp/compat" ./rls/compat)

# stop_all stops the servers of one file.
stop_all() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	pids=()
}

# compare FILE runs both servers on FILE and asks them the questions.
compare() {
	local file=$1 run
	run=$tmp/run.$RANDOM
	mkdir -p "$run/rt/ratelimit/config" "$run/sluice"
	cp "$file" "$run/rt/ratelimit/config/$(basename "$file")"
	cp "$file" "$run/sluice/$(basename "$file")"
	local redis_port envoy_port http_port debug_port sluice_port admin_port
	free_port && redis_port=$port
	free_port && envoy_port=$port
	free_port && http_port=$port
	free_port && debug_port=$port
	free_port && sluice_port=$port
	free_port && admin_port=$port
	redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no >"$run/redis.log" 2>&1 &
	pids+=($!)
	wait_port "$redis_port"
	cat >"$run/sluice.yaml" <<YAML
decide:
  grpc: 127.0.0.1:$sluice_port
  envoy_config: [sluice]
admin: 127.0.0.1:$admin_port
rules: []
YAML
	"$tmp/sluice" serve -config "$run/sluice.yaml" >"$run/sluice.log" 2>&1 &
	pids+=($!)
	wait_port "$sluice_port" || true # bound before envoyproxy/ratelimit's Redis connections take ephemeral ports
	RUNTIME_ROOT=$run/rt RUNTIME_SUBDIRECTORY=ratelimit RUNTIME_WATCH_ROOT=false USE_STATSD=false \
		REDIS_SOCKET_TYPE=tcp REDIS_URL=127.0.0.1:$redis_port LOG_LEVEL=warn \
		HOST=127.0.0.1 PORT=$http_port DEBUG_HOST=127.0.0.1 DEBUG_PORT=$debug_port GRPC_HOST=127.0.0.1 GRPC_PORT=$envoy_port \
		"$tmp/ratelimit" >"$run/ratelimit.log" 2>&1 &
	pids+=($!)
	if ! wait_port "$envoy_port" || ! wait_port "$sluice_port"; then
		tail -n 5 "$run"/*.log
		stop_all
		return 1
	fi
	local record=()
	if [[ -n ${COMPAT_RECORD:-} ]]; then
		cp "$file" "$COMPAT_RECORD/"
		record=(-record "$COMPAT_RECORD/$(basename "$file").answers")
	fi
	"$tmp/compat" -rules "$file" -envoy "127.0.0.1:$envoy_port" -sluice "127.0.0.1:$sluice_port" "${record[@]}" || true
	stop_all
	echo
}

# refused FILE says whether each side refuses FILE, and sluice's errors.
refused() {
	local file=$1 dir envoy=accepts sluice=accepts mark=same
	dir=$tmp/check.$RANDOM
	mkdir -p "$dir/rules" && cp "$file" "$dir/rules/"
	"$tmp/config_check" -config_dir "$dir/rules" >"$dir/envoy.out" 2>&1 || envoy=refuses
	"$tmp/compat" -check "$file" >"$dir/sluice.out" 2>&1 || sluice=refuses
	[[ $envoy == "$sluice" ]] || mark=DIFFERS
	printf '%-28s envoyproxy/ratelimit %-8s sluice %-8s %s\n' "$(basename "$file")" "$envoy" "$sluice" "$mark"
	grep -m1 -o 'error.*' "$dir/envoy.out" | cut -c1-150 | sed 's/^/    envoyproxy\/ratelimit: /' || true
	head -n 2 "$dir/sluice.out" | sed "s|$src/||; s/^/    sluice: /"
}

files=("$src"/examples/ratelimit/config/*.yaml "$src"/test/config/*.yaml)
echo "== which files each side accepts"
for f in "${files[@]}"; do refused "$f"; done
echo
for f in "${files[@]}"; do
	d=$tmp/accept.$RANDOM && mkdir -p "$d" && cp "$f" "$d/"
	if "$tmp/config_check" -config_dir "$d" >/dev/null 2>&1; then
		echo "== $(basename "$f")"
		# A port free when chosen can be taken before a server binds it (by
		# another program's outgoing connection): try again with new ports.
		compare "$f" >"$tmp/try.out" || compare "$f" >"$tmp/try.out" || compare "$f" >"$tmp/try.out" ||
			echo "compat $f: a server did not start three times (its logs are above)"
		cat "$tmp/try.out"
	fi
done
