package decision

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/throttle"
)

// What the throttle learns from a response: the time to the status, never
// the time a slow caller took to read the body; the upstream's Retry-After
// on its 429 and 503 (seconds or a date); the gateway's own answers as
// failures; a caller gone as nothing.
func TestThrottleOutcome(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	retry := func(v string) Headers { return fields{"Retry-After": {v}} }
	for _, tc := range []struct {
		name string
		resp Response
		want throttle.Outcome
	}{
		{"slow reader", Response{Passed: true, Status: 200, Latency: 9 * time.Second, FirstByte: 40 * time.Millisecond},
			throttle.Outcome{Status: 200, Latency: 40 * time.Millisecond}},
		{"503 seconds", Response{Passed: true, Status: 503, FirstByte: time.Millisecond, Header: retry("30")},
			throttle.Outcome{Status: 503, Latency: time.Millisecond, RetryAfter: 30 * time.Second}},
		{"429 date", Response{Passed: true, Status: 429, FirstByte: time.Millisecond, Header: retry(now.Add(90 * time.Second).Format(httpDates[0]))},
			throttle.Outcome{Status: 429, Latency: time.Millisecond, RetryAfter: 90 * time.Second}},
		{"503 date passed", Response{Passed: true, Status: 503, FirstByte: time.Millisecond, Header: retry(now.Add(-time.Hour).Format(httpDates[0]))},
			throttle.Outcome{Status: 503, Latency: time.Millisecond}},
		{"503 garbage", Response{Passed: true, Status: 503, FirstByte: time.Millisecond, Header: retry("-5")},
			throttle.Outcome{Status: 503, Latency: time.Millisecond}},
		{"200 with Retry-After", Response{Passed: true, Status: 200, FirstByte: time.Millisecond, Header: retry("30")},
			throttle.Outcome{Status: 200, Latency: time.Millisecond}},
		{"unreachable", Response{Passed: true, Status: 502, FirstByte: time.Millisecond, Failure: UpstreamFailed},
			throttle.Outcome{Status: 502, Latency: time.Millisecond, Failed: true}},
		{"timeout", Response{Passed: true, Status: 504, FirstByte: time.Second, Failure: UpstreamTimeout},
			throttle.Outcome{Status: 504, Latency: time.Second, Timeout: true}},
		{"caller gone", Response{Passed: true, Status: 200, FirstByte: time.Millisecond, Aborted: true},
			throttle.Outcome{Status: 200, Latency: time.Millisecond, Canceled: true}},
		{"caller's body broke", Response{Passed: true, Status: 400, FirstByte: time.Millisecond, Failure: CallerFailed},
			throttle.Outcome{Status: 400, Latency: time.Millisecond, Canceled: true}},
		{"no time on the clock", Response{Passed: true, Status: 200},
			throttle.Outcome{Status: 200, Latency: 1}},
	} {
		if got := throttleOutcome(&tc.resp, now); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
