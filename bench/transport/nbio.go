package main

import (
	"net/http"
	"runtime"
	"strconv"

	"github.com/lesismal/nbio/nbhttp"
	"github.com/valyala/fasthttp"
)

// serveNbio serves on nbio's nbhttp engine (its own parser, net/http's
// types). The 429 handler runs on the poller goroutines; the proxying
// one, which blocks on the upstream, in nbhttp's default goroutine pool.
func serveNbio(addr string, hc *fasthttp.HostClient) error {
	conf := nbhttp.Config{Network: "tcp", Addrs: []string{addr}, NPoller: runtime.NumCPU()}
	if hc == nil {
		conf.ServerExecutor = func(f func()) { f() }
		conf.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_ = r.Header.Get("X-Api-Key")
			h := w.Header()
			h["Content-Type"] = []string{"text/plain"}
			h["Content-Length"] = []string{"18"}
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(body))
		})
	} else {
		conf.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { forward(hc, w, r) })
	}
	e := nbhttp.NewEngine(conf)
	if err := e.Start(); err != nil {
		return err
	}
	select {}
}

// forward sends r to the upstream and copies its answer to w.
func forward(hc *fasthttp.HostClient, w http.ResponseWriter, r *http.Request) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(r.Method)
	req.SetRequestURI(r.RequestURI)
	req.Header.SetHost(r.Host)
	for k, vs := range r.Header {
		if k == "Connection" {
			continue
		}
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if err := hc.Do(req, resp); err != nil {
		http.Error(w, "bad gateway", http.StatusBadGateway)
		return
	}
	h := w.Header()
	for k, v := range resp.Header.All() {
		if string(k) != "Connection" {
			h.Add(string(k), string(v))
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(resp.Body())))
	w.WriteHeader(resp.StatusCode())
	_, _ = w.Write(resp.Body())
}
