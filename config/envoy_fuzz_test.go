package config

import (
	"errors"
	"testing"
)

// FuzzParseEnvoy checks that no input makes ParseEnvoy panic, that a
// failure is Errors with positions inside the file, and that a success has
// a domain and descriptors with keys.
func FuzzParseEnvoy(f *testing.F) {
	for _, seed := range []string{
		envoyRules,
		"",
		"domain: d\n",
		"---\ndomain: d\ndescriptors: [{key: k, value: 'a*b*', share_threshold: true, rate_limit: {unit: SECOND, requests_per_unit: 4294967295}}]\n",
		"domain: d\ndescriptors: [{key: k, rate_limit: {unlimited: true, unit: day}}]\n",
		"domain: d\ndescriptors: [{key: k, rate_limit: {unit: year, requests_per_unit: 10000, algorithm: sliding_log}}]\n",
		"domain: &d d\ndescriptors: *d\n",
		"0.25: d\ndescriptors: [a, b]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dom, err := ParseEnvoy("f.yaml", data)
		if err == nil {
			if dom.Domain == "" {
				t.Fatalf("accepted a file without a domain: %+v", dom)
			}
			checkDescriptors(t, dom.Descriptors)
			return
		}
		var es Errors
		if !errors.As(err, &es) || len(es) == 0 {
			t.Fatalf("error %v is not Errors", err)
		}
		lines := len(lineStarts(data)) + 1 // the end of the last line may count
		for _, e := range es {
			if e.Line < 0 || e.Line > lines || e.Col < 0 {
				t.Fatalf("error %q outside the file (%d lines)", e, lines)
			}
		}
	})
}

func checkDescriptors(t *testing.T, descs []EnvoyDescriptor) {
	for _, d := range descs {
		if d.Key == "" {
			t.Fatalf("accepted a descriptor without a key: %+v", d)
		}
		if rl := d.RateLimit; rl != nil && !rl.Unlimited && rl.RequestsPerUnit > 0 && rl.Limit.Rate() == 0 {
			t.Fatalf("a rate_limit of %d per %s has no limit", rl.RequestsPerUnit, rl.Unit)
		}
		checkDescriptors(t, d.Descriptors)
	}
}
