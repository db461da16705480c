package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// onFailureConfig limits partner-a to 3/m on /claims; %s is on_failure.
const onFailureConfig = `listen: 127.0.0.1:18080
upstream: {{UPSTREAM}}
store: { on_failure: %s }
clients:
  list:
    - id: partner-a
      keys: [` + keyA + `]
rules:
  - name: claims
    match: { path: /claims }
    rate: 3/m
`

// brokenStore is a store that can decide nothing.
type brokenStore struct{}

var errBroken = errors.New("test store: broken")

func (brokenStore) Decide(context.Context, store.Key, limiter.Limit, time.Time, int64) (limiter.Decision, error) {
	return limiter.Decision{}, errBroken
}

func (brokenStore) DecideEach(context.Context, []store.Result, []store.Request, time.Time) ([]store.Result, error) {
	return nil, errBroken
}

func (brokenStore) DecideAll(context.Context, []store.Result, []store.Request, time.Time) ([]store.Result, error) {
	return nil, errBroken
}

func (brokenStore) Close() error { return nil }

// TestOnFailureGovernsEveryStore: on_failure applies to whatever store
// the gateway uses, not only to Redis: with a store that cannot decide,
// open passes the request and closed and local answer 503.
func TestOnFailureGovernsEveryStore(t *testing.T) {
	for mode, want := range map[string]int{"open": http.StatusOK, "closed": http.StatusServiceUnavailable,
		"local": http.StatusServiceUnavailable} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t)
			h.writeConfig(fmt.Sprintf(onFailureConfig, mode))
			h.store = brokenStore{}
			h.serve()
			if r := h.get("/claims", keyA); r.Status != want {
				t.Errorf("on_failure %s: %d %s, want %d", mode, r.Status, r.Body, want)
			}
		})
	}
}
