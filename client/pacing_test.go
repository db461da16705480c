package client

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store/memory"
)

// sluiceServer is sluice's own middleware on 127.0.0.1 with one rule of
// rate/period (burst for the buckets) over every path, on clk.
func sluiceServer(t *testing.T, clk *jumpClock, alg limiter.Algorithm, rate int64, period time.Duration, legacy bool) *httptest.Server {
	t.Helper()
	rule := policy.Rule{Name: "api", Key: policy.KeySpec{Kind: policy.KeyGlobal}, Algorithm: alg,
		Rate: policy.Rate{N: rate, Period: period}}
	pol, err := policy.Compile(policy.Policy{Rules: []policy.Rule{rule}})
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New(memory.Options{Clock: clk.Fake})
	t.Cleanup(func() { st.Close() })
	lim, err := httplimit.New(httplimit.Options{Policy: pol, Store: st, Clock: clk.Fake, LegacyHeaders: legacy})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(lim.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	t.Cleanup(srv.Close)
	return srv
}

// Against sluice itself, whatever its algorithm, a caller that paces on the
// headers never gets a 429, and is not much slower than the limit: 60
// requests at 10/s take the burst of 10 at once and about 5s for the rest.
// sliding_window takes twice that: when its 10 are spent early in a window
// the next unit frees 1.1s later, which t rounds up to 2s (whole seconds,
// never early), and by then the whole quota is back.
func TestNo429AgainstSluice(t *testing.T) {
	for _, alg := range limiter.Algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			clk := newJumpClock()
			srv := sluiceServer(t, clk, alg, 10, time.Second, false)
			tr := transport(t, clk)
			tr.MaxRetries = -1 // a 429 would show
			for i := range 60 {
				if code := get(t, tr, srv.URL); code != http.StatusOK {
					t.Fatalf("request %d: status %d", i, code)
				}
			}
			most := 7 * time.Second
			if alg == limiter.SlidingWindow {
				most = 11 * time.Second
			}
			if took := clk.Now().Sub(epoch); took < 5*time.Second || took > most {
				t.Errorf("60 requests at 10/s took %v, want 5s to %v", took, most)
			}
		})
	}
}

// The legacy X-RateLimit-* trio paces alike.
func TestNo429AgainstSluiceLegacy(t *testing.T) {
	clk := newJumpClock()
	srv := sluiceServer(t, clk, limiter.FixedWindow, 5, time.Second, true)
	tr := transport(t, clk)
	tr.MaxRetries = -1
	tr.Base = &http.Transport{}
	// Strip the RateLimit fields so that only the legacy ones are left.
	strip := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err == nil {
			resp.Header.Del("Ratelimit")
			resp.Header.Del("Ratelimit-Policy")
		}
		return resp, err
	})
	tr.Base = strip
	for i := range 20 {
		if code := get(t, tr, srv.URL); code != http.StatusOK {
			t.Fatalf("request %d: status %d", i, code)
		}
	}
	if took := clk.Now().Sub(epoch); took < 3*time.Second || took > 4*time.Second {
		t.Errorf("20 requests at 5/s took %v, want 3s to 4s", took)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// After r=0 nothing is sent before t; a t beyond MaxWait or the deadline
// fails the request at once, unsent.
func TestHoldUntilT(t *testing.T) {
	clk := newJumpClock()
	var sentAt []time.Duration
	srv := newServer(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		sentAt = append(sentAt, clk.Now().Sub(epoch))
		switch n {
		case 1:
			w.Header().Set("Ratelimit", `"claims";r=0;t=5`)
		case 2:
			w.Header().Set("Ratelimit", `"claims";r=0;t=3600`)
		}
	})
	tr := transport(t, clk)
	get(t, tr, srv.URL)
	get(t, tr, srv.URL)
	if want := []time.Duration{0, 5 * time.Second}; !slices.Equal(sentAt, want) {
		t.Errorf("sent at %v, want %v", sentAt, want)
	}
	_, err := (&http.Client{Transport: tr}).Get(srv.URL)
	var we *WaitError
	if !errors.As(err, &we) || we.Cause != `RateLimit policy "claims"` || we.Wait != time.Hour || srv.n.Load() != 2 {
		t.Fatalf("err %v, %d requests; want a *WaitError for an hour past MaxWait and nothing sent", err, srv.n.Load())
	}
	t.Log(err)
}

// An empty quota's t is bounded: by its policy's window, or by
// maxEmptyHold without a policy; past it the host is asked again. A t of
// decades (a server's mistake) would otherwise keep every request from
// the host for as long.
func TestEmptyHoldBounded(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		want         time.Duration
	}{
		{"no policy", "", maxEmptyHold},
		// the window, then one unit more at q/w (6s) for the unit kept in hand
		{"window", `"claims";q=10;w=60`, time.Minute + 6*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newJumpClock()
			var sentAt []time.Duration
			srv := newServer(t, func(n int64, w http.ResponseWriter, r *http.Request) {
				sentAt = append(sentAt, clk.Now().Sub(epoch))
				w.Header().Set("Ratelimit", `"claims";r=0;t=2000000000`)
				if tc.policy != "" {
					w.Header().Set("Ratelimit-Policy", tc.policy)
				}
			})
			tr := transport(t, clk)
			tr.MaxWait = 2 * maxEmptyHold
			get(t, tr, srv.URL)
			get(t, tr, srv.URL)
			if want := []time.Duration{0, tc.want}; !slices.Equal(sentAt, want) {
				t.Errorf("sent at %v, want %v", sentAt, want)
			}
		})
	}
}

// The pacer counts against what an answer says is left the requests the
// server may have counted after it: those in flight, and those that came
// back while it was on its way.
func TestPacerInFlight(t *testing.T) {
	var p pacer
	now := epoch
	info := func(r int64) []quotaInfo {
		return []quotaInfo{{key: quotaKey{name: "a"}, remaining: r, next: time.Second, limit: 10, window: time.Second}}
	}
	t1, _, _ := p.acquire("h", now) // no quota known yet: all three go
	t2, _, _ := p.acquire("h", now)
	t3, _, _ := p.acquire("h", now)
	p.done("h", t1, now, info(3), 0) // 3 left, 2 others in flight: 1
	// One unit is kept in hand while the rate refills: the next waits
	// for a second unit, 100ms at 10/s.
	if _, h, ch := p.acquire("h", now); ch == nil || h.wait != 100*time.Millisecond {
		t.Fatalf("hold %v, want 100ms", h)
	}
	q := p.hosts["h"].quotas[quotaKey{name: "a"}]
	// The 3rd says 5 left; the 2nd is in flight, the 1st came back while
	// the 3rd was on its way: 5 - 2.
	p.done("h", t3, now, info(5), 0)
	if q.level != 3 {
		t.Errorf("level %v, want 3", q.level)
	}
	// The 2nd says 9 left: it may have been counted before the 1st and the
	// 3rd, done since it was sent: 9 - 2.
	p.done("h", t2, now, info(9), 0)
	if q.level != 7 {
		t.Errorf("level %v, want 7", q.level)
	}
}

// Eight callers at once against sluice's middleware: the requests in
// flight count against what each answer says is left, so none earns a 429
// whatever order the server sees them in. The server and the Transport
// share one fake clock that moves only when a caller waits, and never
// while the server decides a request (jumpClock.decide): an answer's r is
// exactly what the server had left at the time it read, and a loaded
// machine changes only the order the server sees requests in.
func TestNo429Concurrent(t *testing.T) {
	for _, alg := range []limiter.Algorithm{limiter.TokenBucket, limiter.GCRA} {
		t.Run(alg.String(), func(t *testing.T) {
			rule := policy.Rule{Name: "api", Key: policy.KeySpec{Kind: policy.KeyGlobal}, Algorithm: alg,
				Rate: policy.Rate{N: 50, Period: time.Second}, Burst: 50}
			pol, err := policy.Compile(policy.Policy{Rules: []policy.Rule{rule}})
			if err != nil {
				t.Fatal(err)
			}
			clk := newJumpClock()
			st := memory.New(memory.Options{Clock: clk.Fake})
			defer st.Close()
			lim, err := httplimit.New(httplimit.Options{Policy: pol, Store: st, Clock: clk.Fake})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(clk.decide(lim.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))))
			defer srv.Close()
			tr := transport(t, clk)
			tr.MaxRetries = -1 // a 429 would show
			var wg sync.WaitGroup
			codes := make(chan int, 8*20)
			for range 8 {
				wg.Go(func() {
					for range 20 {
						resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
						if err != nil {
							t.Error(err)
							return
						}
						resp.Body.Close()
						codes <- resp.StatusCode
					}
				})
			}
			wg.Wait()
			close(codes)
			for c := range codes {
				if c != http.StatusOK {
					t.Fatalf("status %d", c)
				}
			}
		})
	}
}

// The legacy trio names no window, so its X-RateLimit-Limit gives no rate
// to refill by: the units left are X-RateLimit-Remaining until the next
// answer, as without a Limit (a q over no window once refilled the quota
// at once, to the full Limit, and sent every caller).
func TestPacerLegacyLimitNoRate(t *testing.T) {
	var p pacer
	now := epoch
	t1, _, _ := p.acquire("h", now)
	p.done("h", t1, now, []quotaInfo{{key: quotaKey{legacy: true}, remaining: 1, next: time.Minute, limit: 10}}, 0)
	for _, at := range []time.Time{now, now.Add(time.Millisecond)} {
		if _, h, ch := p.acquire("h", at); ch != nil {
			t.Fatalf("at +%v: hold %v with 1 left, want the request sent", at.Sub(now), h)
		}
		if _, h, ch := p.acquire("h", at); ch == nil || h.wait != waitForAnswer {
			t.Fatalf("at +%v: hold %v with none left and one in flight, want a wait for its answer", at.Sub(now), h)
		}
		p.cancel("h")
	}
}
