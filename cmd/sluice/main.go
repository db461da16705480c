// Command sluice is the rate-limiting gateway: serve, check, demo, version.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/demo"
	"github.com/sluice-rl/sluice/gateway"
)

const usage = `usage: sluice <command> [flags]

commands:
  serve --config FILE   run the gateway in front of the configured upstream
  check --config FILE   validate a configuration file and exit (1 on any error)
  demo                  the claims story: sluice in front of a service, a buggy partner and a normal one
  version               print the version
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stderr)
	case "check":
		return check(args[1:], stdout, stderr)
	case "demo":
		return runDemo(stderr)
	case "version":
		fmt.Fprintln(stdout, "sluice", version())
		return 0
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "sluice: unknown command %q\n%s", args[0], usage)
	return 2
}

func configFlag(name string, args []string, stderr io.Writer) (string, bool) {
	fs := flag.NewFlagSet("sluice "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "configuration file (YAML)")
	if err := fs.Parse(args); err != nil {
		return "", false
	}
	if *path == "" || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "usage: sluice %s --config FILE\n", name)
		return "", false
	}
	return *path, true
}

// check validates a file: every error as FILE:line:col: message, exit 1; or
// a one-line summary, exit 0.
func check(args []string, stdout, stderr io.Writer) int {
	path, ok := configFlag("check", args, stderr)
	if !ok {
		return 2
	}
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	p := cfg.Policy
	fmt.Fprintf(stdout, "%s: ok: %d rules, %d clients, %d plans; listen %s, upstream %s, admin %s, store %s\n",
		path, len(p.Rules), len(p.Clients.List), len(p.Plans), cfg.Listen, cfg.Upstream.Redacted(), cfg.Admin, cfg.Store.Type)
	return 0
}

// serve runs the gateway until SIGTERM or SIGINT, reloading on SIGHUP and
// on file change.
func serve(args []string, stderr io.Writer) int {
	path, ok := configFlag("serve", args, stderr)
	if !ok {
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := serveConfig(cfg, log); err != nil {
		log.Error("sluice stopped", "err", err.Error())
		return 1
	}
	return 0
}

// gcPercent is the garbage collector's target for serve unless GOGC is set:
// a proxy's live heap is small and its garbage plentiful, so the default
// (100) collects very often. bench/gateway.sh measured what it gains,
// together with the proxy's buffer pool (gateway's copyBuffers).
const gcPercent = 400

func serveConfig(cfg *config.File, log *slog.Logger) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	g, err := gateway.New(gateway.Options{Config: cfg, Logger: log})
	if err != nil {
		return err
	}
	defer g.Close()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	adm, err := net.Listen("tcp", cfg.Admin)
	if err != nil {
		ln.Close()
		return fmt.Errorf("admin listen: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP) // before serving: a SIGHUP must never kill the process
	defer signal.Stop(hup)
	go reloadOnHangup(ctx, g, hup)
	go func() {
		if err := g.WatchConfig(ctx, 200*time.Millisecond); err != nil {
			log.Warn("not watching the configuration file", "err", err.Error())
		}
	}()
	log.Info("sluice serving", "listen", ln.Addr().String(), "admin", adm.Addr().String(),
		"upstream", cfg.Upstream.Redacted(), "rules", cfg.Compiled.Rules())
	err = g.Run(ctx, ln, adm)
	log.Info("sluice stopped")
	return err
}

func reloadOnHangup(ctx context.Context, g *gateway.Gateway, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			_ = g.Reload() // a refused reload is logged by the gateway
		}
	}
}

func runDemo(stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if _, err := demo.Run(ctx, demo.Options{}); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "sluice demo:", err)
		return 1
	}
	return 0
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
