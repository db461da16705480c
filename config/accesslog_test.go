package config

import (
	"testing"
)

// TestAccessLog: no block is no access log, an empty one takes the
// defaults, and each field is read.
func TestAccessLog(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       *AccessLog
	}{
		{"absent", "", nil},
		{"defaults", "access_log: {}\n", &AccessLog{Sample: 1, Path: "stdout", Buffer: 4096}},
		{"all", "access_log: {sample: 0.25, path: /var/log/sluice.log, buffer: 16}\n",
			&AccessLog{Sample: 0.25, Path: "/var/log/sluice.log", Buffer: 16}},
		{"refused only", "access_log: {sample: 0, path: stderr}\n", &AccessLog{Sample: 0, Path: "stderr", Buffer: 4096}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("t.yaml", []byte(head+tc.text+"rules: [{name: a, rate: 1/s}]\n"))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == nil && f.AccessLog != nil:
				t.Errorf("access log = %+v, want none", *f.AccessLog)
			case tc.want != nil && (f.AccessLog == nil || *f.AccessLog != *tc.want):
				t.Errorf("access log = %+v, want %+v", f.AccessLog, *tc.want)
			}
		})
	}
}

func TestAccessLogErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"sample above 1", "access_log: {sample: 1.5}\n",
			"t.yaml:3:22: access_log.sample: 1.5 is out of range (from 0 to 1: the share of passed requests logged, such as 0.1; default 1)"},
		{"sample negative", "access_log: {sample: -0.1}\n",
			"t.yaml:3:22: access_log.sample: -0.1 is out of range (from 0 to 1: the share of passed requests logged, such as 0.1; default 1)"},
		{"sample word", "access_log: {sample: half}\n",
			`t.yaml:3:22: access_log.sample: "half" is not a number (the share of passed requests logged, from 0 to 1, such as 0.1; default 1)`},
		{"buffer zero", "access_log: {buffer: 0}\n",
			"t.yaml:3:22: access_log.buffer: 0 is out of range (1 to 1048576 lines; default 4096)"},
		{"empty path", "access_log: {path: ''}\n",
			`t.yaml:3:20: access_log.path: is empty (a file to append to, "stdout" or "stderr"; default stdout)`},
		{"unknown field", "access_log: {fields: [status]}\n",
			`t.yaml:3:14: access_log: unknown field "fields" (accepted: sample, path, buffer)`},
		{"not a mapping", "access_log: true\n",
			"t.yaml:3:13: access_log: want a mapping (sample, path, buffer), not a value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(head+tc.text+"rules: [{name: a, rate: 1/s}]\n"))
			if err == nil || err.Error() != tc.want {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}
