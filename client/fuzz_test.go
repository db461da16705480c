package client

import (
	"net/http"
	"testing"
	"time"
)

// FuzzHeaders feeds any header values to the parsers and the pacer: nothing
// panics, every number read is within bounds, and no hold is negative or
// longer than the longest a header can say.
//
//	go test -fuzz FuzzHeaders ./client
func FuzzHeaders(f *testing.F) {
	f.Add("23", `"claims";r=57;t=23`, `"claims";q=100;w=60`, "", "")
	f.Add("Tue, 01 Jan 2030 12:00:30 GMT", `"a";r=0;t=5, b;r=2`, `"a";q=5;w=30, b;q=1;w=1`, "", "")
	f.Add("-1", `"a";r=-1;t=9`, `garbage(`, "0", "2000000042")
	f.Add("99999999999999999999", `"a";r=1;t=99999999999999`, `"a";q=1;w=999999999999999`, "7", "-3")
	f.Add("", `"a";r=0;t=0`, `"a";q=1;w=1;qu="requests";pk=:YQ==:`, "", "")
	f.Fuzz(func(t *testing.T, retryAfter, rateLimit, policy, remaining, reset string) {
		now := time.Unix(2_000_000_000, 0)
		if d, ok := parseRetryAfter(retryAfter, now); d < 0 || d > maxSeconds*time.Second || !ok && d != 0 {
			t.Fatalf("parseRetryAfter(%q) = %v, %v", retryAfter, d, ok)
		}
		h := http.Header{"Ratelimit": {rateLimit}, "Ratelimit-Policy": {policy},
			"X-Ratelimit-Remaining": {remaining}, "X-Ratelimit-Reset": {reset}}
		quotas := parseQuotas(h, now)
		if len(quotas) > maxItems {
			t.Fatalf("%d quotas", len(quotas))
		}
		for _, q := range quotas {
			if q.remaining < 0 || q.next < 0 || q.next > maxSeconds*time.Second || q.limit < 0 ||
				(q.limit > 0) != (q.window > 0) || q.window > maxSeconds*time.Second {
				t.Fatalf("quota %+v from %q, %q", q, rateLimit, policy)
			}
		}
		var p pacer
		for range 3 {
			ticket, _, _ := p.acquire("h", now)
			p.done("h", ticket, now, quotas, 0)
			for range 2 {
				_, hold, _ := p.acquire("h", now)
				if hold.wait < 0 || hold.wait != waitForAnswer && hold.wait > 2*maxSeconds*time.Second {
					t.Fatalf("hold %v", hold)
				}
			}
			now = now.Add(time.Second)
		}
	})
}
