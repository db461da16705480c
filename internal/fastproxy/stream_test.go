package fastproxy_test

import (
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// maxGrowth bounds how much the process's peak resident memory may grow
// while a body many times its size goes through: generous, since the race
// detector, the test's own upstream and client and the GC's pacing all
// take their share, but a tenth of the upload and a twentieth of the
// download, so that a body buffered whole cannot pass.
const maxGrowth = 48 << 20

// TestStreamUpload: a 100 MB body goes to the upstream as it arrives, with
// a known length and chunked, and peak memory stays flat.
func TestStreamUpload(t *testing.T) {
	const size = 100 << 20
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {}) // serve counts the body
	s := startStand(t, mustURL(t, up.URL), standOptions{fwd: xff})
	for _, chunked := range []bool{false, true} {
		before := peakRSS(t)
		body := io.Reader(&zeros{n: size})
		r, err := http.NewRequest("PUT", s.url+"/upload", body)
		if err != nil {
			t.Fatal(err)
		}
		if !chunked {
			r.ContentLength = size
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := up.last(t).body; resp.StatusCode != 200 || got != size {
			t.Fatalf("chunked %v: status %d, the upstream read %d bytes, want %d", chunked, resp.StatusCode, got, size)
		}
		if grew := peakRSS(t) - before; grew > maxGrowth {
			t.Errorf("chunked %v: peak RSS grew by %d MiB for a %d MiB body", chunked, grew>>20, size>>20)
		}
	}
}

// TestStreamDownload: a 1 GB answer of known length, and a 256 MB chunked
// one, reach the caller as the upstream sends them, and peak memory stays
// flat.
func TestStreamDownload(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		size, _ := strconv.ParseInt(r.URL.Query().Get("size"), 10, 64)
		if r.URL.Query().Get("length") == "1" {
			w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		}
		_, _ = io.Copy(w, &zeros{n: size})
	})
	s := startStand(t, mustURL(t, up.URL), standOptions{fwd: xff})
	for _, d := range []struct {
		q    string
		size int64
	}{{"?length=1&size=1073741824", 1 << 30}, {"?size=268435456", 256 << 20}} {
		q, size := d.q, d.size
		before := peakRSS(t)
		resp, err := http.Get(s.url + "/download" + q)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != size {
			t.Fatalf("%q: read %d bytes (%v), want %d", q, n, err, size)
		}
		if grew := peakRSS(t) - before; grew > maxGrowth {
			t.Errorf("%q: peak RSS grew by %d MiB for a %d MiB body", q, grew>>20, size>>20)
		}
	}
	http.DefaultClient.CloseIdleConnections()
}

// peakRSS returns the process's peak resident set (VmHWM) in bytes, after
// a collection, so that garbage from before does not count.
func peakRSS(t *testing.T) int64 {
	t.Helper()
	runtime.GC()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status:", err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmHWM in /proc/self/status")
	return 0
}

// zeros reads n zero bytes, without holding them.
type zeros struct{ n int64 }

var zeroBlock = make([]byte, 64<<10)

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	n := copy(p, zeroBlock)
	n = int(min(int64(n), z.n))
	z.n -= int64(n)
	return n, nil
}
