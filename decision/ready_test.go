package decision_test

import (
	"context"
	"testing"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/throttle"
)

// Request.Ready runs once the rules have passed a request and before the
// Throttle is asked: BodyRead takes a slot, BodyStreams passes without one,
// BodyFailed does not pass (StatusClientGone); a request the rules refuse
// is never asked, nor one decided without a Throttle.
func TestReady(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ready    decision.Readiness
		throttle bool
		path     string // /claims: 1 a minute, used up first
		asked    bool
		pass     bool
		status   int
		inFlight int
	}{
		{"read: takes its slot", decision.BodyRead, true, "/other", true, true, 0, 1},
		{"streams: passes without a slot", decision.BodyStreams, true, "/other", true, true, 0, 0},
		{"failed: the transport answers", decision.BodyFailed, true, "/other", true, false, decision.StatusClientGone, 0},
		{"refused by the rules: never asked", decision.BodyRead, true, "/claims", false, false, 429, 0},
		{"no throttle: never asked", decision.BodyFailed, false, "/other", false, true, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := engine(t, nil)
			pol := claims(t)
			thr, err := throttle.New(throttle.Config{MaxInFlight: 1})
			if err != nil {
				t.Fatal(err)
			}
			set := decision.Settings{Policy: pol}
			if tc.throttle {
				set.Throttle = thr
			}
			decide(t, e, pol, get("/claims", hdr{"X-Api-Key": {"key-a"}})) // uses up /claims
			asked := false
			req := get(tc.path, hdr{"X-Api-Key": {"key-a"}})
			req.Ready = func() decision.Readiness { asked = true; return tc.ready }
			v := e.Decide(context.Background(), set, req)
			if asked != tc.asked || v.Pass != tc.pass || v.Status != tc.status {
				t.Errorf("asked %v, pass %v, status %d; want %v, %v, %d", asked, v.Pass, v.Status, tc.asked, tc.pass, tc.status)
			}
			if got := thr.Stats().InFlight; got != tc.inFlight {
				t.Errorf("in flight %d, want %d", got, tc.inFlight)
			}
			v.Finish(&decision.Response{Passed: v.Pass, Status: 200})
			if got := thr.Stats().InFlight; got != 0 {
				t.Errorf("in flight %d after Finish, want 0", got)
			}
		})
	}
}
