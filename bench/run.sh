#!/usr/bin/env bash
# bench/run.sh [TARGET...] runs sluice's benchmarks and prints, for each
# target, a table of medians and as the target's last line a one-line
# summary. With no target it runs them all.
#
# Targets:
#   core     the memory store against golang.org/x/time/rate and
#            github.com/sethvargo/go-limiter (module bench/core), 1 to 2 minutes
#   gateway  sluice serve against nginx limit_req with wrk, plain and on TLS
#            (bench/gateway.sh), about 125 s
#   redis    the Redis store against a bare Lua script, and the gateway on
#            Redis against memory and on gossip (bench/redis.sh), about 4 minutes
#   protect  sluice's protect block against nginx limit_conn in front of a
#            service of fixed capacity at 3x its capacity (bench/protect.sh),
#            about 70 s
#   rls      sluice as Envoy's rate limit service (gRPC, 64 calls in flight on
#            one connection) on memory and Redis, against envoyproxy/ratelimit
#            built from RATELIMIT_SRC and a no-op server (bench/rls.sh), about
#            2 minutes
#   check    /check behind nginx (auth_request) against nginx limit_req alone
#            (bench/check.sh), about 60 s
#   client   sluice's client.Transport against a plain retry loop and
#            hashicorp/go-retryablehttp behind sluice serve at 50/s
#            (bench/client.sh, module bench/client), about 2 minutes
#   transport HTTP/1.1 transports (fasthttp variants, gnet, nbio; module
#            bench/transport) beside nginx: 429, proxying, idle connections'
#            memory (bench/transport.sh), about 6 minutes
#   idle     the idle rows of transport alone: 10,000 keep-alive connections
#            to each of nginx, sluice serve and the transports, KB each and
#            the ratio to nginx's (bench/transport.sh), about 2 minutes
#
# Environment: ROUNDS (core: rounds of every benchmark, default 9),
# BENCHTIME (go test -benchtime per benchmark and round, default 250ms).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
name=bench
# shellcheck source=bench/lib.sh
source "$here/lib.sh" # median, and $tmp: a scratch directory removed on exit
targets=(core gateway redis protect rls check client transport idle) # add a target: a run_NAME function and its name here

usage() {
	local IFS='|'
	echo "usage: bench/run.sh [${targets[*]}]...   (no target: all)" >&2
	exit 2
}

# bvals FILE BENCH UNIT prints BENCH's UNIT column (such as ns/op or
# allocs/op) of every round recorded in FILE, one a line.
bvals() {
	awk -v b="$2" -v u="$3" '$1 == b { for (i = 3; i < NF; i++) if ($(i + 1) == u) print $i }' "$1"
}

# bstat FILE BENCH UNIT prints the median of bvals.
bstat() { bvals "$@" | median; }

run_core() {
	local dir=$here/core rounds=${ROUNDS:-9} benchtime=${BENCHTIME:-250ms}
	(cd "$dir" && go test -c -o "$tmp/core.test" .)
	# One binary, every benchmark in each round, so that the libraries are
	# measured side by side on the same machine at the same moments (the
	# benchmarks run in source order, each next to the one it is compared
	# with); the medians over the rounds smooth out what else the machine
	# is doing.
	# -cpu 2 makes RunParallel use two goroutines; serial benchmarks run
	# one goroutine whatever it is.
	local speed='^Benchmark(XTimeAllow|SluiceHot|SluiceParallel|SluiceHotFixed|TimeNow|ClockReal|LimiterDecide|GoLimiter1|GoLimiter100k|Sluice100k|XTimeMap100k|Sluice1M)$'
	for ((r = 1; r <= rounds; r++)); do
		echo "bench core: round $r of $rounds" >&2
		(cd "$dir" && "$tmp/core.test" -test.run '^$' -test.bench "$speed" \
			-test.benchtime "$benchtime" -test.cpu 2 -test.benchmem) >>"$tmp/out.txt"
	done
	(cd "$dir" && "$tmp/core.test" -test.run '^$' -test.bench '^BenchmarkSluiceIdleKeyMemory$' \
		-test.benchtime 1x -test.cpu 2) >>"$tmp/out.txt"

	local names
	names=$(awk '$1 ~ /^Benchmark/ {print $1}' "$tmp/out.txt" | sort -u)
	printf '%-40s %12s %10s\n' benchmark "median ns/op" allocs/op
	for n in $names; do
		[[ $n == *IdleKeyMemory* ]] && continue
		printf '%-40s %12s %10s\n' "$n" "$(bstat "$tmp/out.txt" "$n" ns/op)" "$(bstat "$tmp/out.txt" "$n" allocs/op)"
	done

	local hot xtime fixed k100 gl100 par allocs bpk
	hot=$(bstat "$tmp/out.txt" BenchmarkSluiceHot-2 ns/op)
	fixed=$(bstat "$tmp/out.txt" BenchmarkSluiceHotFixed-2 ns/op)
	xtime=$(bstat "$tmp/out.txt" BenchmarkXTimeAllow-2 ns/op)
	k100=$(bstat "$tmp/out.txt" BenchmarkSluice100k-2 ns/op)
	gl100=$(bstat "$tmp/out.txt" BenchmarkGoLimiter100k-2 ns/op)
	par=$(bstat "$tmp/out.txt" BenchmarkSluiceParallel-2 ns/op)
	allocs=$(bvals "$tmp/out.txt" BenchmarkSluiceHot-2 allocs/op | sort -g | tail -1) # the worst round
	bpk=$(bstat "$tmp/out.txt" BenchmarkSluiceIdleKeyMemory-2 bytes/key)
	echo "hot and keys100k read the clock per decision, as xtime and go-limiter do."
	echo "hot = clock $(bstat "$tmp/out.txt" BenchmarkClockReal-2 ns/op) (time.Now: $(bstat "$tmp/out.txt" BenchmarkTimeNow-2 ns/op))"
	echo "      + limiter.Decide $(bstat "$tmp/out.txt" BenchmarkLimiterDecide-2 ns/op) + the store's own work (at a fixed time, store and limiter: $fixed)"
	awk -v hot="$hot" -v xtime="$xtime" -v k="$k100" -v g="$gl100" -v par="$par" -v a="$allocs" -v b="$bpk" 'BEGIN {
		printf "core: hot=%.1f xtime=%.1f ratio=%.2f keys100k=%.1f golimiter100k=%.1f ratio100k=%.2f parallel=%.2f allocs=%d bytesperkey=%.1f\n",
			hot, xtime, hot / xtime, k, g, k / g, par / hot, a, b
	}'
}

run_gateway() { bash "$here/gateway.sh"; }
run_redis() { bash "$here/redis.sh"; }
run_protect() { bash "$here/protect.sh"; }
run_rls() { bash "$here/rls.sh"; }
run_check() { bash "$here/check.sh"; }
run_client() { bash "$here/client.sh"; }
run_transport() { bash "$here/transport.sh"; }
run_idle() { TRANSPORT_ROUNDS=0 bash "$here/transport.sh"; }

main() {
	(($# > 0)) || set -- "${targets[@]}"
	local t k known
	for t in "$@"; do
		known=false
		for k in "${targets[@]}"; do [[ $t == "$k" ]] && known=true; done
		$known || usage
	done
	for t in "$@"; do
		rm -f "$tmp/out.txt"
		"run_$t"
	done
}

main "$@"
