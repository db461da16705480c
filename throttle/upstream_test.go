package throttle

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
)

// The ceiling counted where it matters: at a real upstream over real
// sockets, with many callers sending through one Throttle as a gateway
// would (acquire, send, release with the answer).
func TestCeilingAtRealUpstream(t *testing.T) {
	const ceiling, callers, each = 4, 24, 20
	var at, most, served atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := at.Add(1)
		defer at.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(time.Millisecond) // the upstream's service time (not a synchronisation)
		served.Add(1)
	}))
	defer up.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: callers}}
	defer client.CloseIdleConnections()
	th, err := New(Config{MaxInFlight: ceiling, Queue: Queue{MaxLength: callers}, Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for range each {
				if err := send(th, client, up.URL, Request{Priority: Priority(c % 3), Client: string(rune('a' + c%4))}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m > ceiling || served.Load() != callers*each {
		t.Fatalf("the upstream saw %d at once (ceiling %d) and served %d of %d", m, ceiling, served.Load(), callers*each)
	}
	t.Logf("the upstream saw at most %d at once", most.Load())
}

// send is one request through the Throttle to url.
func send(th *Throttle, client *http.Client, url string, r Request) error {
	d := th.Acquire(context.Background(), r)
	if !d.Admitted {
		return nil
	}
	resp, err := client.Get(url)
	if err != nil {
		d.Release(Outcome{Failed: true})
		return err
	}
	resp.Body.Close()
	d.Release(Outcome{Status: resp.StatusCode})
	return nil
}
