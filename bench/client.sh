#!/usr/bin/env bash
# bench/client.sh measures how three Go clients fare against a rate limit:
# 8 concurrent workers call one endpoint behind `sluice serve`, limited to
# 50 requests a second per client (one client, key-a: every worker counts
# against the same limit), for the same time each, in alternating rounds
# (the order reversed every other round):
#
#   naive          a plain http.Client that sends again at once after a 429
#   retryablehttp  github.com/hashicorp/go-retryablehttp v0.7.8, defaults
#   client         sluice's client.Transport, defaults
#
# The load is bench/client (its own module, so that go-retryablehttp stays
# out of sluice's go.mod); it counts answers on the wire, below the client,
# so retries made inside one call count. It prints a table of the sums over
# the rounds and, as its last line,
#
#   client: goodput=<2xx per s, client.Transport> limit=50 got429=<429s received, client.Transport> naive_429=<...> retryablehttp_429=<...> retryablehttp_goodput=<...>
#
# goodput is the 2xx a second beyond each run's first burst: every run
# starts on a full quota (the sleep before it lets the limit refill), so
# (2xx - burst) / seconds, summed over the rounds, is what the limit
# granted over time, at most the limit however the client behaves. The
# 429s are every one received, from each run's first request. Targets:
# got429 = 0, goodput >= 0.95 x limit.
#
#   bash bench/client.sh        (or bash bench/run.sh client)
#
# Environment: CLIENT_ROUNDS (default 3), CLIENT_DURATION (measured seconds
# per run, default 10), CLIENT_ALGORITHM (the limit's algorithm, default
# token_bucket: burst 50), CLIENT_WORKERS (default 8). About 2 minutes with
# the defaults.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${CLIENT_ROUNDS:-3} duration=${CLIENT_DURATION:-10}
algorithm=${CLIENT_ALGORITHM:-token_bucket} workers=${CLIENT_WORKERS:-8}
limit=50

name=client
# shellcheck source=bench/lib.sh
source bench/lib.sh
install_missing curl:curl

echo "client: building sluice, the upstream and the load" >&2
go build -o "$tmp/sluice" ./cmd/sluice
go build -o "$tmp/upstream" ./bench/tools/upstream
(cd bench/client && go build -o "$tmp/clientbench" .)

free_port && up_port=$port
"$tmp/upstream" -addr "127.0.0.1:$up_port" 2>"$tmp/upstream.log" &
pids+=($!)
free_port && sl_port=$port
free_port && admin_port=$port
sluice_yaml "$tmp/sluice.yaml" "$sl_port" "$admin_port" "$up_port" "{type: memory}" "$algorithm" "$limit/s"
"$tmp/sluice" serve --config "$tmp/sluice.yaml" 2>"$tmp/sluice.log" &
pids+=($!)
for p in "$up_port" "$sl_port"; do wait_port "$p"; done
code=$(status "$sl_port")
[[ $code == 200 ]] || { echo "client: sluice answered $code, want 200" >&2; exit 1; }

: >"$tmp/results"
for ((r = 1; r <= rounds; r++)); do
	echo "client: round $r of $rounds" >&2
	order "$r" naive retryablehttp client
	for m in "${order[@]}"; do
		sleep 2 # the quota refills (a second at 50/s), and no run sees the last one's retries
		"$tmp/clientbench" -url "http://127.0.0.1:$sl_port/" -mode "$m" -workers "$workers" \
			-duration "${duration}s" | tee -a "$tmp/results" >&2
	done
done

awk -v limit="$limit" -v burst="$limit" '
function val(name,   i) { for (i = 1; i <= NF; i++) if (index($i, name "=") == 1) return substr($i, length(name) + 2); return 0 }
$1 == "clientbench:" {
	m = val("mode"); ok[m] += val("ok"); good[m] += val("ok") - burst; secs[m] += val("seconds")
	tm[m] += val("got429"); errs[m] += val("errors")
}
END {
	printf "%-14s %10s %12s %10s %8s\n", "mode", "2xx", "goodput/s", "429s", "errors"
	split("naive retryablehttp client", ms, " ")
	for (i = 1; i <= 3; i++) {
		m = ms[i]
		printf "%-14s %10d %12.1f %10d %8d\n", m, ok[m], good[m] / secs[m], tm[m], errs[m]
	}
	printf "client: goodput=%.1f limit=%d got429=%d naive_429=%d retryablehttp_429=%d retryablehttp_goodput=%.1f\n",
		good["client"] / secs["client"], limit, tm["client"], tm["naive"], tm["retryablehttp"], good["retryablehttp"] / secs["retryablehttp"]
}' "$tmp/results"
