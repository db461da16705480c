package config

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/policy"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    policy.Rate
		wantErr string
	}{
		{in: "100/s", want: policy.Rate{N: 100, Period: time.Second}},
		{in: "100/m", want: policy.Rate{N: 100, Period: time.Minute}},
		{in: "5/h", want: policy.Rate{N: 5, Period: time.Hour}},
		{in: "1/d", want: policy.Rate{N: 1, Period: 24 * time.Hour}},
		{in: "100/30s", want: policy.Rate{N: 100, Period: 30 * time.Second}},
		{in: "5/1500ms", want: policy.Rate{N: 5, Period: 1500 * time.Millisecond}},
		{in: "7/1h30m", want: policy.Rate{N: 7, Period: 90 * time.Minute}},
		{in: "007/s", want: policy.Rate{N: 7, Period: time.Second}},
		{in: "1000000000/1ms", want: policy.Rate{N: 1e9, Period: time.Millisecond}},
		{in: "1/8784h", want: policy.Rate{N: 1, Period: 366 * 24 * time.Hour}},
		{in: "100", wantErr: `"100" is not a rate (N/s, N/m, N/h, N/d or N/<duration> such as 100/m or 100/30s)`},
		{in: "", wantErr: `"" is not a rate (N/s, N/m, N/h, N/d or N/<duration> such as 100/m or 100/30s)`},
		{in: "/m", wantErr: `"/m": the count "" is not a whole number (digits only, such as 100/m)`},
		{in: "+5/m", wantErr: `"+5/m": the count "+5" is not a whole number (digits only, such as 100/m)`},
		{in: "-5/m", wantErr: `"-5/m": the count "-5" is not a whole number (digits only, such as 100/m)`},
		{in: "1,000/m", wantErr: `"1,000/m": the count "1,000" is not a whole number (digits only, such as 100/m)`},
		{in: "1_000/m", wantErr: `"1_000/m": the count "1_000" is not a whole number (digits only, such as 100/m)`},
		{in: "1.5/s", wantErr: `"1.5/s": the count "1.5" is not a whole number (digits only, such as 100/m)`},
		{in: " 5/s", wantErr: `" 5/s": the count " 5" is not a whole number (digits only, such as 100/m)`},
		{in: "0/s", wantErr: `"0/s": the count must be at least 1 (1 to 1000000000)`},
		{in: "1000000001/s", wantErr: `"1000000001/s": the count is too large (1 to 1000000000)`},
		{in: "99999999999999999999/s", wantErr: `"99999999999999999999/s": the count is too large (1 to 1000000000)`},
		{in: "100/min", wantErr: `"100/min": unknown period "min" (s, m, h, d or a Go duration such as 30s, 1500ms or 36h)`},
		{in: "100/2d", wantErr: `"100/2d": unknown period "2d" (s, m, h, d or a Go duration such as 30s, 1500ms or 36h)`},
		{in: "100/", wantErr: `"100/": unknown period "" (s, m, h, d or a Go duration such as 30s, 1500ms or 36h)`},
		{in: "100/M", wantErr: `"100/M": unknown period "M" (s, m, h, d or a Go duration such as 30s, 1500ms or 36h)`},
		{in: "100/-1s", wantErr: `"100/-1s": unknown period "-1s" (s, m, h, d or a Go duration such as 30s, 1500ms or 36h)`},
		{in: "100/m/s", wantErr: `"100/m/s": unknown period "m/s" (s, m, h, d or a Go duration such as 30s, 1500ms or 36h)`},
		{in: "100/0s", wantErr: `"100/0s": period 0s out of range (1ms to 366 days, 8784h)`},
		{in: "100/999us", wantErr: `"100/999us": period 999µs out of range (1ms to 366 days, 8784h)`},
		{in: "100/8785h", wantErr: `"100/8785h": period 8785h0m0s out of range (1ms to 366 days, 8784h)`},
		{in: "100/1000001ns", wantErr: `"100/1000001ns": period 1.000001ms is not a whole number of microseconds`},
		{in: "100/99999999999999999999h", wantErr: `"100/99999999999999999999h": unknown period "99999999999999999999h" (s, m, h, d or a Go duration such as 30s, 1500ms or 36h)`},
	} {
		got, err := ParseRate(tc.in)
		switch {
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Errorf("ParseRate(%q) error = %v\nwant %s", tc.in, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("ParseRate(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// A rate written by policy.Rate.String parses back to itself.
func TestParseRateRoundTrip(t *testing.T) {
	for _, r := range []policy.Rate{{N: 1, Period: time.Second}, {N: 100, Period: time.Minute}, {N: 3, Period: time.Hour},
		{N: 9, Period: 24 * time.Hour}, {N: 100, Period: 30 * time.Second}, {N: 5, Period: 1500 * time.Millisecond}} {
		got, err := ParseRate(r.String())
		if err != nil || got != r {
			t.Errorf("ParseRate(%q) = %v, %v", r.String(), got, err)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	accepted := []string{"listen", "upstream", "burst", "algorithm"}
	for in, want := range map[string]string{
		"listn":     `did you mean "listen"? `,
		"LISTEN":    `did you mean "listen"? `,
		"burts":     `did you mean "burst"? `, // a swap counts once
		"algoritm":  `did you mean "algorithm"? `,
		"upstraem":  `did you mean "upstream"? `,
		"admin":     "",
		"x":         "",
		"listening": "",
	} {
		if got := didYouMean(in, accepted); got != want {
			t.Errorf("didYouMean(%q) = %q, want %q", in, got, want)
		}
	}
}
