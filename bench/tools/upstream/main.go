// Command upstream is the service the benchmarks put behind sluice and
// nginx.
//
// By default it is trivial: it answers every request, on any path and
// method, with 200 and the body "ok", so that what bench/gateway.sh
// measures is the proxy in front of it.
//
//	upstream -addr 127.0.0.1:9000
//
// With -capacity it is a service of fixed capacity instead
// (internal/fixedcap, the model bench/run.sh protect and `sluice demo
// overload` use): -capacity workers, each serving one request at a time
// for -service; requests beyond them wait in the service's own backlog,
// first come first served, so its latency rises with every request beyond
// capacity while its throughput stays capacity/service. -slowdown
// multiplies the service time. With -stats it serves its figures on a
// second address, where no gateway in front forwards: GET /stats is a
// JSON object (in_flight, max_in_flight: the most requests at the service
// at once, served, refused, left, slowdown), POST /reset starts the counts
// again.
//
//	upstream -addr 127.0.0.1:9000 -capacity 16 -service 50ms -stats 127.0.0.1:9001
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/sluice-rl/sluice/internal/fixedcap"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("upstream", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:9000", "address to listen on (host:port; loopback only in benchmarks)")
	capacity := fs.Int("capacity", 0, "requests served at once; 0: the trivial service that answers at once")
	service := fs.Duration("service", 50*time.Millisecond, "with -capacity: how long one request takes")
	backlog := fs.Int("backlog", 0, "with -capacity: how many may wait for a worker (then 503); 0: no bound")
	slowdown := fs.Float64("slowdown", 1, "with -capacity: service time factor (3: three times as slow)")
	stats := fs.String("stats", "", "with -capacity: address for GET /stats and POST /reset")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var handler http.Handler = http.HandlerFunc(ok)
	if *capacity > 0 {
		model, err := fixedcap.New(fixedcap.Config{Capacity: *capacity, ServiceTime: *service, MaxBacklog: *backlog})
		if err != nil {
			return err
		}
		model.SetSlowdown(*slowdown)
		handler = model
		if *stats != "" {
			ln, err := net.Listen("tcp", *stats)
			if err != nil {
				return err
			}
			go func() { // ends with the process
				if err := serve(ln, statsHandler(model)); err != nil {
					fmt.Fprintln(os.Stderr, "upstream: stats:", err)
					os.Exit(1)
				}
			}()
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	return serve(ln, handler)
}

// serve serves h on ln until the process ends.
func serve(ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// statsHandler serves the model's figures: GET /stats, POST /reset.
func statsHandler(m *fixedcap.Service) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m.Stats()) // the caller went away if this fails
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, _ *http.Request) {
		m.Reset()
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
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
