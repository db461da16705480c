package distributedtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
)

// leaseTTL is the tests' store.lease_ttl: short, so that a dead instance's
// slots come back within seconds, and long enough that the check right
// after its death is not late on a loaded machine (see below).
const leaseTTL = 3 * time.Second

// inFlightRules allow partner-a 4 requests in flight, counted on every
// instance together (and many per minute).
const inFlightRules = `  - name: claims
    match: { path: /claims }
    key: client
    rate: 10000/m
  - name: claims-in-flight
    match: { path: /claims }
    key: client
    concurrency: 4
`

// holdingUpstream holds the requests to /claims/hold until the test ends
// and answers the others at once.
type holdingUpstream struct {
	srv     *httptest.Server
	entered chan struct{}
	gate    chan struct{}
	once    sync.Once
}

func newHoldingUpstream(t *testing.T) *holdingUpstream {
	u := &holdingUpstream{entered: make(chan struct{}, 64), gate: make(chan struct{})}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/claims/hold" {
			u.entered <- struct{}{}
			<-u.gate
		}
		_, _ = io.WriteString(w, "claim 7: open\n")
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// hold sends GET /claims/hold as partner-a to inst from a goroutine of wg
// and returns once the request is held at the upstream.
func (u *holdingUpstream) hold(t *testing.T, wg *sync.WaitGroup, c *http.Client, inst *instance) {
	t.Helper()
	wg.Go(func() { _ = send(c, inst, "partner-a", "/claims/hold") })
	select {
	case <-u.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("a request never reached the upstream")
	}
}

// letGo ends every held request; a cleanup registered after the
// instances', so that it runs before they shut down.
func (u *holdingUpstream) letGo() { u.once.Do(func() { close(u.gate) }) }

// Three instances on one Redis share partner-a's 4 slots in flight; when
// the instance holding two of them dies (closed without releasing them),
// the others see them held until the leases expire and free after, while
// the live instances' own requests, older than the TTL by then, keep
// theirs through the renewals.
func TestConcurrencySharedAndDeadInstanceSlotsReturn(t *testing.T) {
	srv := redistest.StartServer(t)
	up := newHoldingUpstream(t)
	s := setup{addrs: []string{srv.Addr}, prefix: redistest.KeyPrefix(t), timeout: "5s", onFailure: "closed",
		instances: 3, rules: inFlightRules, leaseTTL: leaseTTL.String()}
	dying, g := startGateway(t, s, up.srv.URL)
	b, _ := startGateway(t, s, up.srv.URL)
	c2, _ := startGateway(t, s, up.srv.URL)
	c := newClient(t)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)  // the held requests answered,
	t.Cleanup(up.letGo) // once let go (cleanups run last first)
	for _, inst := range []*instance{dying, dying, b, c2} {
		up.hold(t, &wg, c, inst)
	}
	for _, inst := range []*instance{dying, b, c2} {
		if a := send(c, inst, "partner-a", "/claims/quick"); a.status != http.StatusTooManyRequests {
			t.Fatalf("a 5th request in flight: %d %v, want 429 on every instance", a.status, a.err)
		}
	}

	// The instance dies: its renewals stop and its store closes, so its
	// requests' leases are never released.
	died := time.Now()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if a := send(c, b, "partner-a", "/claims/quick"); time.Since(died) < leaseTTL-time.Second && a.status != http.StatusTooManyRequests {
		t.Errorf("right after the death: %d %v, want 429 (the dead instance's slots are held until they expire)", a.status, a.err)
	}
	for {
		a := send(c, b, "partner-a", "/claims/quick")
		if a.status == http.StatusOK {
			break
		}
		if a.status != http.StatusTooManyRequests || time.Since(died) > leaseTTL+10*time.Second {
			t.Fatalf("%v after the death: %d %v, want the dead instance's slots back within the lease TTL (%v)", time.Since(died), a.status, a.err, leaseTTL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	back := time.Since(died)
	if back < leaseTTL-time.Second {
		t.Errorf("slots back %v after the death, sooner than a lease TTL of %v allows", back, leaseTTL)
	}
	t.Logf("the dead instance's slots were back %v after its death (lease TTL %v)", back, leaseTTL)

	// Exactly the dead instance's 2 came back: the live instances' 2, held
	// longer than the TTL, were renewed. Its two leases were last renewed
	// at moments of their own, each at the latest when it died: both are
	// gone a lease TTL after its death, the first may have gone sooner.
	if d := leaseTTL + 250*time.Millisecond - time.Since(died); d > 0 {
		time.Sleep(d)
	}
	up.hold(t, &wg, c, b)
	up.hold(t, &wg, c, c2)
	if a := send(c, c2, "partner-a", "/claims/quick"); a.status != http.StatusTooManyRequests {
		t.Errorf("with 4 in flight again: %d %v, want 429", a.status, a.err)
	}
}

// While Redis is down each on_failure mode decides the concurrency rule's
// leases too: open admits without a lease (more than the limit in flight),
// closed answers 503, and local lets each instance hold its share,
// concurrency / instances, in its own memory.
func TestConcurrencyWhileRedisDown(t *testing.T) {
	rules := `  - name: claims
    match: { path: /other }
    key: client
    rate: 10000/m
  - name: claims-in-flight
    match: { path: /claims }
    key: client
    concurrency: 6
`
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			srv := redistest.StartServer(t)
			up := newHoldingUpstream(t)
			s := setup{addrs: []string{srv.Addr}, prefix: redistest.KeyPrefix(t), timeout: "50ms", onFailure: mode,
				instances: 3, rules: rules}
			first, _ := startGateway(t, s, up.srv.URL)
			second, _ := startGateway(t, s, up.srv.URL)
			c := newClient(t)
			var wg sync.WaitGroup
			t.Cleanup(wg.Wait)
			t.Cleanup(up.letGo)
			srv.Stop()
			switch mode {
			case "open":
				for range 7 { // one more than the limit: nothing is counted
					up.hold(t, &wg, c, first)
				}
			case "closed":
				if a := send(c, first, "partner-a", "/claims/quick"); a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
					t.Errorf("closed: %d %v, want 503 with Retry-After", a.status, a.err)
				}
			case "local":
				up.hold(t, &wg, c, first)
				up.hold(t, &wg, c, first)
				if a := send(c, first, "partner-a", "/claims/quick"); a.status != http.StatusTooManyRequests {
					t.Errorf("local: a third on the first instance got %d %v, want 429 (its share is 6/3)", a.status, a.err)
				}
				if a := send(c, second, "partner-a", "/claims/quick"); a.status != http.StatusOK {
					t.Errorf("local: the second instance's own share got %d %v, want 200", a.status, a.err)
				}
			}
		})
	}
}
