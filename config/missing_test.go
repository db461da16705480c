package config

import (
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/policy"
)

// missing_header takes shared (the default), ip or reject, and only on a
// header:NAME rule.
func TestMissingHeader(t *testing.T) {
	for text, want := range map[string]policy.MissingHeader{
		"":                             policy.MissingShared,
		"    missing_header: shared\n": policy.MissingShared,
		"    missing_header: ip\n":     policy.MissingIP,
		"    missing_header: reject\n": policy.MissingReject,
	} {
		f := mustParse(t, head+"rules:\n  - name: t\n    rate: 1/s\n    key: header:X-Tenant\n"+text)
		if k := f.Compiled.Rule(0).Key; k.Missing != want || k.Header != "X-Tenant" {
			t.Errorf("%q: key %+v, want missing %v", text, k, want)
		}
	}
	for text, want := range map[string]string{
		"    key: header:X-Tenant\n    missing_header: drop\n": `t.yaml:7:21: rules[0].missing_header: unknown value "drop" (accepted: shared, ip, reject)`,
		"    key: ip\n    missing_header: ip\n":                "t.yaml:7:21: rules[0].missing_header: ip applies only to key: header:NAME (this rule counts by ip; remove missing_header)",
		"    missing_header: reject\n":                         "t.yaml:6:21: rules[0].missing_header: reject applies only to key: header:NAME (this rule counts by ip; remove missing_header)",
	} {
		_, err := Parse("t.yaml", []byte(head+"rules:\n  - name: t\n    rate: 1/s\n"+text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", text, err, want)
		}
	}
}
