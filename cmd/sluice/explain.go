package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/gateway"
	"github.com/sluice-rl/sluice/store/memory"
)

// runtimeWait bounds reading the run-time overrides for --explain.
const runtimeWait = 3 * time.Second

// usageTail is what a command's usage line names after --config FILE.
var usageTail = map[string]string{
	"check": " [--explain 'METHOD PATH' [--host HOST] [--key KEY] [--ip ADDR] [--header NAME:VALUE]...]",
}

// explainFlags are check's flags that describe a request to explain.
type explainFlags struct {
	request, host, key, ip string
	headers                headerList
}

// headerList is a repeatable --header NAME:VALUE.
type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

func (f *explainFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.request, "explain", "", "explain a request: 'METHOD PATH', such as 'GET /claims/7'")
	fs.StringVar(&f.host, "host", "", "with --explain: the request's host (its Host field)")
	fs.StringVar(&f.key, "key", "", "with --explain: the caller's access key")
	fs.StringVar(&f.ip, "ip", "", "with --explain: the caller's address")
	fs.Var(&f.headers, "header", "with --explain: a header field of the request, NAME:VALUE (repeatable)")
}

// set reports whether a request is to be explained (or an explain flag
// was given without --explain, which explainFile refuses).
func (f *explainFlags) set() bool {
	return f.request != "" || f.host != "" || f.key != "" || f.ip != "" || len(f.headers) > 0
}

// query is the request as GET /api/v1/explain's query describes it.
func (f *explainFlags) query() (string, error) {
	if f.request == "" {
		return "", fmt.Errorf("--host, --key, --ip and --header describe the request of --explain 'METHOD PATH', which is missing")
	}
	q := url.Values{}
	method, path, ok := strings.Cut(strings.TrimSpace(f.request), " ")
	if !ok {
		method, path = "GET", method
	}
	q.Set("method", method)
	q.Set("path", strings.TrimSpace(path))
	for name, v := range map[string]string{"host": f.host, "key": f.key, "ip": f.ip} {
		if v != "" {
			q.Set(name, v)
		}
	}
	for _, h := range f.headers {
		q.Add("header", h)
	}
	return q.Encode(), nil
}

// explainFile prints, as JSON, how cfg counts the request f describes,
// on fresh counters of a memory store of its own, under the limits in
// force now: the schedule's entries and the run-time overrides the
// instances apply (read from runtime.file, or from Redis with store:
// redis; explained without them, and said so, if they cannot be read).
func explainFile(cfg *config.File, f explainFlags, stdout, stderr io.Writer) int {
	q, err := f.query()
	if err == nil {
		var req decision.Request
		if req, err = gateway.ExplainRequest(q, cfg.Compiled); err == nil {
			return printExplanation(cfg, req, stdout, stderr)
		}
	}
	fmt.Fprintln(stderr, "sluice check --explain:", err)
	return 2
}

func printExplanation(cfg *config.File, req decision.Request, stdout, stderr io.Writer) int {
	mem := memory.New(memory.Options{})
	defer mem.Close()
	e, err := decision.New(decision.Options{Store: mem, OnFailure: cfg.Store.OnFailure})
	if err != nil {
		fmt.Fprintln(stderr, "sluice check --explain:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), runtimeWait)
	defer cancel()
	st, err := gateway.LoadRuntime(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "sluice check --explain: the run-time overrides cannot be read (%v); explained without them\n", err)
	}
	pol, ignored := gateway.PolicyInForce(cfg, st, time.Now())
	for _, s := range ignored {
		fmt.Fprintln(stderr, "sluice check --explain: run-time override left out:", s)
	}
	ex := e.Explain(context.Background(), decision.Settings{Policy: pol}, req)
	b, err := json.MarshalIndent(gateway.Explanation(ex, "fresh"), "", "  ")
	if err != nil {
		fmt.Fprintln(stderr, "sluice check --explain:", err)
		return 1
	}
	_, _ = stdout.Write(append(b, '\n'))
	return 0
}
