package client

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 120 * time.Second, true},
		{" 3 ", 3 * time.Second, true},
		{"0", 0, true},
		{"Tue, 01 Jan 2030 12:00:30 GMT", 30 * time.Second, true},
		{"Tuesday, 01-Jan-30 12:00:30 GMT", 30 * time.Second, true}, // RFC 850
		{"Mon, 31 Dec 2029 12:00:00 GMT", 0, true},                  // a date in the past: now
		{"Tue, 01 Jan 7000 00:00:00 GMT", maxSeconds * time.Second, true},
		{"99999999999999999999999", maxSeconds * time.Second, true}, // huge: clamped, never overflows
		{"", 0, false},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"5s", 0, false},
		{"soon", 0, false},
		{"+5", 0, false},
	} {
		got, ok := parseRetryAfter(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseQuotas(t *testing.T) {
	now := time.Unix(2_000_000_000, 0)
	claims := quotaKey{name: "claims"}
	for _, c := range []struct {
		name string
		h    http.Header
		want []quotaInfo
	}{
		{"sluice's answer", http.Header{
			"Ratelimit-Policy": {`"claims";q=100;w=60`},
			"Ratelimit":        {`"claims";r=57;t=23`},
		}, []quotaInfo{{key: claims, remaining: 57, next: 23 * time.Second, limit: 100, window: time.Minute}}},
		{"two items, two lines, a token name", http.Header{
			"Ratelimit-Policy": {`"claims";q=5;w=30`, `day;q=1000;w=86400`},
			"Ratelimit":        {`"claims";r=0;t=6, day;r=999;t=80000`},
		}, []quotaInfo{
			{key: claims, remaining: 0, next: 6 * time.Second, limit: 5, window: 30 * time.Second},
			{key: quotaKey{name: "day"}, remaining: 999, next: 80000 * time.Second, limit: 1000, window: 24 * time.Hour},
		}},
		{"no policy: rate unknown", http.Header{"Ratelimit": {`"claims";r=3;t=1`}},
			[]quotaInfo{{key: claims, remaining: 3, next: time.Second}}},
		{"unknown parameters ignored", http.Header{
			"Ratelimit-Policy": {`"claims";q=10;w=1;qu="requests";pk=:cHsxMjM=:;zz=?1`},
			"Ratelimit":        {`"claims";r=4;t=1;zz=1.5;yy=tok`},
		}, []quotaInfo{{key: claims, remaining: 4, next: time.Second, limit: 10, window: time.Second}}},
		{"a concurrency rule: r without t", http.Header{"Ratelimit": {`"conc";r=2`}},
			[]quotaInfo{{key: quotaKey{name: "conc"}, remaining: 2}}},
		{"negative r: the item is ignored", http.Header{"Ratelimit": {`"a";r=-1;t=5, "b";r=1;t=1`}},
			[]quotaInfo{{key: quotaKey{name: "b"}, remaining: 1, next: time.Second}}},
		{"negative t, r not an integer, no r: ignored", http.Header{"Ratelimit": {`"a";r=1;t=-1, "b";r=1.5, "c";t=3`}}, nil},
		{"a bad policy gives no rate", http.Header{
			"Ratelimit-Policy": {`"claims";q=0;w=60, "x";q=5`},
			"Ratelimit":        {`"claims";r=1;t=1`},
		}, []quotaInfo{{key: claims, remaining: 1, next: time.Second}}},
		{"not a structured list", http.Header{"Ratelimit": {`claims: 5 left`}}, nil},
		{"a trailing comma", http.Header{"Ratelimit": {`"claims";r=1,`}}, nil},
		{"an unterminated string", http.Header{"Ratelimit": {`"claims;r=1`}}, nil},
		{"an inner list", http.Header{"Ratelimit": {`("a" "b");r=1`}}, nil},
		{"uppercase key", http.Header{"Ratelimit": {`"claims";R=1`}}, nil},
		{"legacy", http.Header{"X-Ratelimit-Limit": {"60"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"17"}},
			[]quotaInfo{{key: quotaKey{legacy: true}, remaining: 0, next: 17 * time.Second, limit: 60}}},
		{"legacy reset as a Unix time", http.Header{"X-Ratelimit-Remaining": {"4"}, "X-Ratelimit-Reset": {"2000000042"}},
			[]quotaInfo{{key: quotaKey{legacy: true}, remaining: 4, next: 42 * time.Second}}},
		{"legacy garbage", http.Header{"X-Ratelimit-Remaining": {"-3"}, "X-Ratelimit-Reset": {"5"}}, nil},
		{"RateLimit wins over legacy", http.Header{"Ratelimit": {`"a";r=2;t=1`}, "X-Ratelimit-Remaining": {"0"}},
			[]quotaInfo{{key: quotaKey{name: "a"}, remaining: 2, next: time.Second}}},
		{"nothing", http.Header{}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := parseQuotas(c.h, now); !reflect.DeepEqual(got, c.want) {
				t.Errorf("parseQuotas = %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestParseListBounds(t *testing.T) {
	long := make([]byte, maxFieldLen+1)
	for i := range long {
		long[i] = 'a'
	}
	if _, ok := parseList(string(long)); ok {
		t.Error("a field longer than maxFieldLen was parsed")
	}
	many := `"a";r=1`
	for range 2 * maxItems {
		many += `, "a";r=1`
	}
	if items, ok := parseList(many); !ok || len(items) != maxItems {
		t.Errorf("%d items kept, ok %v; want %d", len(items), ok, maxItems)
	}
	for _, in := range []string{`"a";r=1234567890123456`, `"a";r=1.2345`, `"a";r=?2`, `"a";r=:a b:`, `"a";r="\x"`, `"a";r=`, `"a";r=@`} {
		if _, ok := parseList(in); ok {
			t.Errorf("parseList(%q) ok, want a syntax error", in)
		}
	}
}
