package limiter

import (
	"strconv"
	"strings"
	"time"
)

// String describes d by what a caller acts on, such as
// "allowed limit=20 remaining=19 retry-after=0s reset=3s", or
// "denied limit=20 remaining=0 retry-after=1.5s reset=30s"; a delay is
// added when there is one ("delay=50ms"), and a RetryAfter of Never reads
// "never". Refill and Reservation, a store's bookkeeping, are left out:
// %v and %+v print this, %#v the whole struct.
func (d Decision) String() string {
	var b strings.Builder
	if d.Allowed {
		b.WriteString("allowed")
	} else {
		b.WriteString("denied")
	}
	b.WriteString(" limit=")
	b.WriteString(strconv.FormatInt(d.Limit, 10))
	b.WriteString(" remaining=")
	b.WriteString(strconv.FormatInt(d.Remaining, 10))
	b.WriteString(" retry-after=")
	b.WriteString(duration(d.RetryAfter))
	b.WriteString(" reset=")
	b.WriteString(duration(d.Reset))
	if d.Delay != 0 {
		b.WriteString(" delay=")
		b.WriteString(duration(d.Delay))
	}
	return b.String()
}

// duration writes d as time.Duration does, and Never as "never".
func duration(d time.Duration) string {
	if d == Never {
		return "never"
	}
	return d.String()
}
