package redistest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// ScriptCalls returns how many EVAL and EVALSHA calls the servers at addrs
// have run in all, from INFO commandstats, so that a test can count a
// store's round trips. It calls t.Fatal if a server does not answer.
func ScriptCalls(t testing.TB, addrs ...string) int {
	t.Helper()
	total := 0
	for _, addr := range addrs {
		stats, err := roundTrip(addr, time.Second, "INFO", "commandstats")
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(stats) {
			for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd); ok {
					n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
					if err != nil {
						t.Fatalf("redistest: INFO commandstats on %s: line %q: %v", addr, line, err)
					}
					total += n
				}
			}
		}
	}
	return total
}
