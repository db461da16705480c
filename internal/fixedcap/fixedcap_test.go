package fixedcap

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newService(t *testing.T, cfg Config) (*Service, *httptest.Server) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

// get sends one GET and returns its status and when it was answered.
func get(ctx context.Context, t *testing.T, url string) (int, time.Time) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Error(err)
		return 0, time.Time{}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, time.Time{}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, time.Now()
}

// waitFor polls the service until cond holds of its Stats (10 s at most).
func waitFor(t *testing.T, s *Service, what string, cond func(Stats) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(s.Stats()); {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s; stats %+v", what, s.Stats())
		}
		time.Sleep(time.Millisecond)
	}
}

// With 2 workers of 40ms, 6 requests at once are answered two at a time:
// the k-th answer comes no earlier than ⌈k/2⌉ × 40ms after the start
// (lower bounds only: a loaded machine may answer later, never earlier).
func TestBeyondCapacityWaits(t *testing.T) {
	const n, service = 6, 40 * time.Millisecond
	s, srv := newService(t, Config{Capacity: 2, ServiceTime: service})
	start := time.Now()
	var mu sync.Mutex
	var done []time.Duration
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			code, at := get(t.Context(), t, srv.URL+"/claims/1")
			if code != http.StatusOK {
				t.Errorf("status %d; want 200", code)
			}
			mu.Lock()
			done = append(done, at.Sub(start))
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(done)
	for k, d := range done {
		if want := time.Duration((k+2)/2) * service; d < want {
			t.Errorf("answer %d after %v; want no earlier than %v (2 workers of %v)", k+1, d, want, service)
		}
	}
	st := s.Stats()
	if st.Served != n || st.InFlight != 0 || st.MaxInFlight > n || st.MaxInFlight < 3 {
		t.Errorf("stats %+v; want %d served, none in flight, at most %d and more than the 2 workers at once", st, n, n)
	}
}

func TestSlowdownMultipliesServiceTime(t *testing.T) {
	const service = 20 * time.Millisecond
	s, srv := newService(t, Config{Capacity: 1, ServiceTime: service})
	s.SetSlowdown(3)
	start := time.Now()
	if code, at := get(t.Context(), t, srv.URL); code != http.StatusOK || at.Sub(start) < 3*service {
		t.Errorf("status %d after %v; want 200 after at least %v", code, at.Sub(start), 3*service)
	}
	s.SetSlowdown(0)
	if got := s.Stats().Slowdown; got != 1 {
		t.Errorf("slowdown after SetSlowdown(0) = %v; want 1", got)
	}
}

// A request finding MaxBacklog waiting is refused at once; a caller that
// gives up while waiting leaves the backlog.
func TestBacklogBoundAndLeaving(t *testing.T) {
	s, err := New(Config{Capacity: 1, ServiceTime: time.Second, MaxBacklog: 1})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	s.sleep = func(time.Duration) { <-release } // at work until the test ends
	srv := httptest.NewServer(s)
	defer srv.Close()
	waiting, cancelWaiting := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { get(t.Context(), t, srv.URL) })
	waitFor(t, s, "the first request at work", func(st Stats) bool { return st.InFlight == 1 })
	wg.Go(func() { get(waiting, t, srv.URL) })
	waitFor(t, s, "the second request waiting", func(st Stats) bool { return st.InFlight == 2 })
	if code, _ := get(t.Context(), t, srv.URL); code != http.StatusServiceUnavailable {
		t.Errorf("third request: status %d; want 503 (backlog of 1 full)", code)
	}
	cancelWaiting()
	waitFor(t, s, "the waiter gone", func(st Stats) bool { return st.Left == 1 })
	if st := s.Stats(); st.InFlight != 1 || st.Refused != 1 || st.MaxInFlight != 2 {
		t.Errorf("stats %+v; want 1 in flight, 1 refused, at most 2 at once", st)
	}
	s.Reset()
	if st := s.Stats(); st.MaxInFlight != 1 || st.Refused != 0 || st.Left != 0 {
		t.Errorf("after Reset: %+v; want the one at work as the maximum, counts at 0", st)
	}
	close(release)
	wg.Wait()
	if st := s.Stats(); st.Served != 1 || st.InFlight != 0 {
		t.Errorf("at the end: %+v; want the one at work served", st)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{{}, {Capacity: 1}, {ServiceTime: time.Second}, {Capacity: 1, ServiceTime: 1, MaxBacklog: -1}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}
