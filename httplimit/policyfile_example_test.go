package httplimit_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/httplimit"
)

// A Go program keeps its rules in a file of their own (no listen, no
// upstream: those are the gateway's), reads them with config.LoadPolicy
// and puts them in front of its handler, counted in the middleware's own
// memory store.
func Example_policyFile() {
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
	lim, err := httplimit.New(httplimit.Options{Policy: pf.Compiled})
	if err != nil {
		log.Fatal(err)
	}
	defer lim.Close()
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
