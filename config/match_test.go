package config

import (
	"reflect"
	"testing"

	"github.com/sluice-rl/sluice/policy"
)

// TestMatchFields: host, path with '*', methods and headers decode into
// the rule's policy.Match, as written; the old spelling (path, methods)
// is unchanged.
func TestMatchFields(t *testing.T) {
	f, err := Parse("t.yaml", []byte(head+`rules:
  - name: docs
    rate: 1/s
    match:
      host: "*.Example.com"
      path: /claims/*/documents
      methods: [GET]
      headers: {X-Env: prod, x-debug: {present: true}, X-Version: 2}
  - name: old
    match: {path: /claims, methods: [POST]}
    rate: 1/s
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []policy.Match{
		{Host: "*.Example.com", Path: "/claims/*/documents", Methods: []string{"GET"}, Headers: []policy.HeaderMatch{
			{Name: "X-Env", Value: "prod"}, {Name: "x-debug", Present: true}, {Name: "X-Version", Value: "2"}}},
		{Path: "/claims", Methods: []string{"POST"}},
	}
	for i, w := range want {
		if got := f.Policy.Rules[i].Match; !reflect.DeepEqual(got, w) {
			t.Errorf("rules[%d].match = %+v, want %+v", i, got, w)
		}
	}
	c := f.Compiled
	r := &policy.Request{Method: "GET", Path: "/claims/7/documents", Host: "a.example.com", Header: fields{"X-Env": {"prod"}, "X-Debug": {""}, "X-Version": {"2"}}}
	if got := c.MatchRequest(r, nil); !reflect.DeepEqual(got, []int{0}) {
		t.Errorf("matched %v, want [0]", got)
	}
}

// fields is a request's header fields by canonical name.
type fields map[string][]string

func (h fields) Values(dst []string, name string) []string { return append(dst, h[name]...) }
