package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// TestDoublesExact sends the extreme integers of the scripts through the
// encoding of requests and replies, and through the formatting of the
// numbers the scripts write as text (TTLs and sliding_log entries): each
// must come back exactly.
func TestDoublesExact(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	vals := []int64{1<<53 - 1, 1 << 52, 1_700_000_000_123_457, 1_000_000_001, 1, 0, -1}
	var b []byte
	for _, v := range vals {
		var d [8]byte
		putDouble(d[:], v)
		b = append(b, d[:]...)
	}
	format, n := strings.Repeat("d", len(vals)), len(vals)
	src := fmt.Sprintf(`local v = {struct.unpack('>%s', ARGV[1])}
local out = {struct.pack('>%s', unpack(v, 1, %d))}
for i = 1, %d do out[i + 1] = string.format('%%d', v[i]) end
return out`, format, format, n, n)
	got, err := do(t, s, s.client.B().Eval().Script(src).Numkeys(0).Arg(string(b)).Build()).AsStrSlice()
	if err != nil || len(got) != len(vals)+1 {
		t.Fatalf("round trip: %q, %v", got, err)
	}
	for i, v := range vals {
		if f := getDouble(got[0][8*i:]); int64(f) != v || float64(int64(f)) != f {
			t.Errorf("%d came back as the double %v", v, f)
		}
		if got[i+1] != strconv.FormatInt(v, 10) {
			t.Errorf("%d formatted by a script as %q", v, got[i+1])
		}
	}
}

// TestCallerContext checks the errors for a caller's context: canceled
// before the call or during it (the caller has gone), the error matches
// context.Canceled; a caller's deadline sooner than Timeout bounds the
// call, with context.DeadlineExceeded.
func TestCallerContext(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true) // Timeout 10s
	short, err := New(context.Background(), Options{Addrs: []string{srv.Addr}, Prefix: redistest.KeyPrefix(t), CallerTime: true, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	l := mustLimit(t, limiter.GCRA, 100, time.Second, 0)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	checkCanceled(t, canceled, s, "canceled before", l)

	waitDecide(t, short, "ctx", l)
	srv.Pause()
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	// Canceled while the call waits for the paused server (it is in flight
	// once its key is, and stays so for short's Timeout, 500ms). Should Redis
	// not notice the cancellation, the Timeout ends the wait.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := short.Decide(ctx, store.RawKey("ctx"), l, epoch, 1)
		done <- err
	}()
	waitFor(t, "the call to be in flight", func() bool { return short.waiting(redisKey(short.prefix, store.RawKey("ctx"))) == 0 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "redis store: eval gcra: ") {
		t.Errorf("Decide canceled while waiting: %v, want context.Canceled in context", err)
	}
	checkCanceled(t, ctx, short, "canceled before, on a paused server", l)

	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.Decide(ctx, store.RawKey("ctx"), l, epoch, 1)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Errorf("Decide with a 100ms deadline on a paused server: %v, want the deadline", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second { // generous: the store's Timeout is 10s
		t.Errorf("Decide with a 100ms deadline took %v", elapsed)
	}
	srv.Resume()
	resumed = true
	waitDecide(t, short, "ctx", l)
}

// checkCanceled decides with ctx through Decide and DecideEach: both must
// fail with an error that matches context.Canceled and says what failed.
func checkCanceled(t *testing.T, ctx context.Context, s *Store, what string, l limiter.Limit) {
	t.Helper()
	_, err := s.Decide(ctx, store.RawKey("ctx"), l, epoch, 1)
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "redis store: eval gcra: ") {
		t.Errorf("Decide %s: %v, want context.Canceled in context", what, err)
	}
	res, err := s.DecideEach(ctx, nil, []store.Request{{Key: store.RawKey("ctx"), Limit: l, Cost: 1}}, epoch)
	if err != nil || !errors.Is(res[0].Err, context.Canceled) {
		t.Errorf("DecideEach %s: %v, %+v; want context.Canceled in the result", what, err, res)
	}
}
