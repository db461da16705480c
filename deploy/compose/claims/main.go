// Command claims is the claims service of `sluice demo` on its own: the
// upstream of deploy/compose's two sluice instances. It serves GET
// /claims/{id} to the partner sluice names in X-Sluice-Client.
package main

import (
	"flag"
	"log"
	"net/http"
	"time"

	"github.com/sluice-rl/sluice/demo"
)

func main() {
	addr := flag.String("listen", ":9000", "address to serve on")
	flag.Parse()
	srv := &http.Server{Addr: *addr, Handler: demo.ClaimsService(), ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
