package config_test

import (
	"fmt"
	"os"

	"github.com/sluice-rl/sluice/config"
)

func ExampleParse() {
	f, err := config.Parse("sluice.yaml", []byte(`
listen: 127.0.0.1:8080
upstream: http://127.0.0.1:9000
rules:
  - name: api
    key: ip
    algorithm: gcra
    rate: 10/s
    burst: 20
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	f.WriteSummary(os.Stdout)
	// Output:
	// listen 127.0.0.1:8080 -> upstream http://127.0.0.1:9000; admin 127.0.0.1:9090
	// store: memory (at most 1000000 keys); on store failure: open
	// clients: none (rules count by ip, header or global)
	//
	// RULE  MATCH  KEY  ALGORITHM  RATE  BURST  COST  MODE     NEVER LIMITED
	// api   /      ip   gcra       10/s  20     1     enforce  -
}

func ExampleParse_errors() {
	_, err := config.Parse("sluice.yaml", []byte(`
listen: 127.0.0.1:8080
upstream: http://127.0.0.1:9000
rules:
  - name: api
    rate: 10/sec
    mode: dryrun
`))
	fmt.Println(err)
	// Output:
	// sluice.yaml:6:11: rules[0].rate: "10/sec": unknown period "sec" (s, m, h, d or a Go duration such as 30s, 1500ms or 36h)
	// sluice.yaml:7:11: rules[0].mode: unknown value "dryrun" (accepted: enforce, shadow)
}

func ExampleParseRate() {
	r, _ := config.ParseRate("100/30s")
	fmt.Println(r.N, r.Period)
	// Output: 100 30s
}
