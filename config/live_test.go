package config

import (
	"strings"
	"testing"
	"time"
)

func TestLiveBlock(t *testing.T) {
	f, err := Parse("t.yaml", []byte(head+"rules: [{name: a, rate: 1/s}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Live != DefaultLive() || f.Live.Top != 100 || f.Live.Period != 10*time.Minute {
		t.Errorf("live = %+v, want the defaults 100 and 10m", f.Live)
	}
	f, err = Parse("t.yaml", []byte(head+"live: {top: 20, period: 1h}\nrules: [{name: a, rate: 1/s}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Live != (Live{Top: 20, Period: time.Hour}) {
		t.Errorf("live = %+v, want 20 and 1h", f.Live)
	}
	var b strings.Builder
	if err := f.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	if line := "live: 20 callers listed per rule and sketch; findings over 1h0m0s\n"; !strings.Contains(b.String(), line) {
		t.Errorf("summary lacks %q:\n%s", line, b.String())
	}
}

func TestLiveErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"top zero", "live: {top: 0}\n",
			"t.yaml:3:13: live.top: 0 is out of range (1 to 10000 callers per rule; default 100)"},
		{"top word", "live: {top: many}\n",
			`t.yaml:3:13: live.top: "many" is not a whole number (1 to 10000 callers per rule; default 100)`},
		{"period short", "live: {period: 30s}\n",
			"t.yaml:3:16: live.period: 30s is out of range (1m to 24h; default 10m)"},
		{"period syntax", "live: {period: ten}\n",
			`t.yaml:3:16: live.period: "ten" is not a duration (such as 10m, 1h; default 10m)`},
		{"unknown field", "live: {tops: 5}\n",
			`t.yaml:3:8: live: unknown field "tops" (did you mean "top"? accepted: top, period)`},
		{"not a mapping", "live: 5\n",
			"t.yaml:3:7: live: want a mapping (top, period), not a value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(head+tc.text+"rules: [{name: a, rate: 1/s}]\n"))
			if err == nil || err.Error() != tc.want {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}
