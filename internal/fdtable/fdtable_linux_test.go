package fdtable

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fdSize is the size of the process's descriptor table (FDSize in
// /proc/self/status).
func fdSize(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "FDSize:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no FDSize in /proc/self/status")
	return 0
}

// open is how many descriptors the process has open.
func open(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func TestReserveGrowsTheTableAndLeavesNothingOpen(t *testing.T) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	want := 1 << 12
	if lim.Cur < uint64(want) {
		t.Skipf("RLIMIT_NOFILE %d is below %d", lim.Cur, want)
	}
	if fdSize(t) >= want {
		t.Skipf("the table already holds %d", fdSize(t))
	}
	before := open(t)
	if err := Reserve(want); err != nil {
		t.Fatalf("Reserve(%d): %v", want, err)
	}
	if got := fdSize(t); got < want {
		t.Errorf("FDSize after Reserve(%d) = %d", want, got)
	}
	if after := open(t); after != before {
		t.Errorf("%d descriptors open after Reserve, %d before", after, before)
	}
	// Again: already that large, nothing to do.
	if err := Reserve(want); err != nil {
		t.Fatalf("second Reserve(%d): %v", want, err)
	}
	if after := open(t); after != before {
		t.Errorf("%d descriptors open after the second Reserve, %d before", after, before)
	}
}

func TestReserveStopsAtTheLimit(t *testing.T) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur > 1<<20 {
		t.Skipf("RLIMIT_NOFILE %d: too large a table to make here", lim.Cur)
	}
	// Uncapped, the dup to a descriptor past the limit would fail (EINVAL).
	if err := Reserve(int(lim.Cur) + 1000); err != nil {
		t.Fatalf("Reserve(limit+1000): %v", err)
	}
	if got := fdSize(t); got < int(lim.Cur) {
		t.Errorf("FDSize %d, below the limit %d", got, lim.Cur)
	}
}
