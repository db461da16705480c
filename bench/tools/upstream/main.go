// Command upstream is the trivial service the gateway benchmark
// (bench/gateway.sh) puts behind sluice and nginx: it answers every request,
// on any path and method, with 200 and the body "ok", so that what is
// measured is the proxy in front of it.
//
//	upstream -addr 127.0.0.1:9000
package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "address to listen on (host:port; loopback only in benchmarks)")
	flag.Parse()
	srv := &http.Server{
		Addr:              *addr,
		Handler:           http.HandlerFunc(ok),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		os.Exit(1)
	}
}

var okBody = []byte("ok")

// ok answers 200 "ok" with a fixed Content-Length, so that keep-alive
// connections are reused by every client.
func ok(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h["Content-Type"] = []string{"text/plain; charset=utf-8"}
	h["Content-Length"] = []string{"2"}
	w.WriteHeader(http.StatusOK)
	w.Write(okBody)
}
