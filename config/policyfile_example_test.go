package config_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/store/memory"
)

// A Go program keeps its rules in a file of their own (no listen, no
// upstream: those are the gateway's) and puts them in front of its
// handler.
func ExampleLoadPolicy() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(path, []byte("rules:\n  - { name: api, key: ip, rate: 1/m }\n"), 0o600); err != nil {
		log.Fatal(err)
	}

	pf, err := config.LoadPolicy(path)
	if err != nil {
		log.Fatal(err) // every problem, as rules.yaml:line:col: what is wrong (what is accepted)
	}
	st := memory.New(memory.Options{})
	defer st.Close()
	lim, err := httplimit.New(httplimit.Options{Policy: pf.Compiled, Store: st})
	if err != nil {
		log.Fatal(err)
	}
	handler := lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for range 2 {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		fmt.Println(w.Code)
	}
	// Output:
	// 200
	// 429
}

func ExampleParsePolicy_errors() {
	_, err := config.ParsePolicy("rules.yaml", []byte(`
rule:
  - name: api
`))
	fmt.Println(err)
	// Output:
	// rules.yaml:2:1: unknown field "rule" (did you mean "rules"? accepted: trusted_proxies, forwarded_header, ipv6_prefix, case_insensitive_paths, clients, plans, rules, time_zone)
	// rules.yaml:2:1: rules: missing (required; such as rules: [{name: api, rate: 100/m}])
}
