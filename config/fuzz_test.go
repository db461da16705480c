package config

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzParse checks that no input makes Parse panic, that a failure is
// always Errors whose positions are inside the file (Line 0, with Col 0,
// is a problem with the whole file), sorted, and that a success is a usable
// File.
func FuzzParse(f *testing.F) {
	design, err := os.ReadFile("testdata/design.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(design),
		minimal,
		designSchedule,
		minimal + "store: {type: redis, redis: {lease: {max: 10, ttl: 500ms}}}\n",
		"",
		"- a\n",
		"listen: :80\x00\n",
		head + "rules:\n  - name: a\n\trate: 1/s\n",
		head + "rules: &r [{name: a, rate: 1/s}]\nplans: *r\n",
		head + "rules: [{name: a, rate: 1/s}]\n---\nlisten: :1\n",
		head + "rules: [{name: a, rate: 99999999999999999999/s, burst: 1e99, cost: 0x10}]\n",
		head + "clients: {list: [{id: a, keys: [k], limits: {a: 1/ms}}]}\nplans: {p: {a: 5/d}}\nrules: [{name: a, key: client, algorithm: sliding_log, rate: 1/s, allow: [a, ::1]}]\n",
		head + "clients: {list: [{id: a, certs: [\"dns:a.example\", \"uri:spiffe://p/a\", \"cn:A\"]}, {id: b, keys: [k], certs: [\"sha256:" + strings.Repeat("0f", 32) + "\"]}]}\nrules: [{name: a, key: client, rate: 1/s}]\n",
		head + "store: {type: gossip, gossip: {bind: 127.0.0.1:7946, join: [127.0.0.1:7947, 'x:1'], interval: 50ms, max_unsynced: 3, key: MDEyMzQ1Njc4OWFiY2RlZg==}}\nrules: [{name: a, rate: 1/s, algorithm: fixed_window}]\n",
		"a: &a [*a]\n",
		"x: !!binary AAAA\n? [a]\n: b\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("f.yaml", data)
		if err == nil {
			if file == nil || file.Compiled == nil || file.Listen == "" || file.Upstream == nil || file.Compiled.Rules() == 0 {
				t.Fatalf("accepted an incomplete file: %+v", file)
			}
			return
		}
		var errs Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("error %T %v is not Errors", err, err)
		}
		lines := len(lineStarts(data)) + 1 // the end of the last line may count
		for i, e := range errs {
			if e.File != "f.yaml" || e.Msg == "" || e.Line < 0 || e.Line > lines || e.Col < 0 || e.Line == 0 && e.Col != 0 {
				t.Fatalf("bad error %+v in a file of %d lines", e, lines)
			}
			if i > 0 && (errs[i-1].Line > e.Line || errs[i-1].Line == e.Line && errs[i-1].Col > e.Col) {
				t.Fatalf("errors out of order: %v", err)
			}
		}
	})
}
