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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/demo"
	"github.com/sluice-rl/sluice/gateway"
	"github.com/sluice-rl/sluice/internal/buildinfo"
	"github.com/sluice-rl/sluice/internal/fdtable"
)

const usage = `usage: sluice <command> [flags]

commands:
  serve FILE            run the gateway in front of the configured upstream, and the decision service
  check FILE            validate a configuration file, print what it does (exit 1 on any error)
  demo                  the claims story: sluice in front of a service, a buggy partner and a normal one
  demo overload         the month-end story: the service slows down, critical reads keep their objective
  demo carbon           the grid's carbon intensity rises: sluice sheds low-priority exports until it falls
  version, --version    print the version, the VCS revision and the Go version (also -v)

serve and check read FILE, or --config FILE; without either, $SLUICE_CONFIG names the file, else
./sluice.yaml is read if it exists. sluice <command> --help describes a command.
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
		return serve(args[1:], stdout, stderr)
	case "check":
		return checkCommand(args[1:], stdout, stderr)
	case "demo":
		if len(args) > 1 && args[1] == "overload" {
			if code, ok := noFlags("demo overload", args[2:], stdout, stderr); !ok {
				return code
			}
			return runOverloadDemo(stderr)
		}
		if len(args) > 1 && args[1] == "carbon" {
			if code, ok := noFlags("demo carbon", args[2:], stdout, stderr); !ok {
				return code
			}
			return runCarbonDemo(stderr)
		}
		if code, ok := noFlags("demo", args[1:], stdout, stderr); !ok {
			return code
		}
		return runDemo(stderr)
	case "version", "--version", "-v":
		if code, ok := noFlags("version", args[1:], stdout, stderr); !ok {
			return code
		}
		fmt.Fprintln(stdout, "sluice", buildinfo.Read())
		return 0
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "sluice: unknown command %q\n%s", args[0], usage)
	return 2
}

// noFlags checks the arguments of a command that takes none (demo,
// version). With ok false the command is over and code is its exit status:
// 0 after -h/--help (the usage on stdout), 2 for anything else (on stderr).
func noFlags(name string, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) == 0 {
		return 0, true
	}
	text := "usage: sluice " + name + "\n\n" + commandHelp[name] + "\n"
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprint(stdout, text)
		return 0, false
	}
	fmt.Fprintf(stderr, "sluice %s: takes no arguments (got %q)\n%s", name, args, text)
	return 2, false
}

var commandHelp = map[string]string{
	"demo": "Runs the claims story on 127.0.0.1 for 40s (SIGTERM or SIGINT ends it early): a claims service, sluice in front of\n" +
		"it, a buggy partner over its limit and a normal one that notices nothing.",
	"demo overload": "Runs the month-end story on 127.0.0.1 for 38s (SIGTERM or SIGINT ends it early): a claims service of\n" +
		"fixed capacity that slows down at month-end, sluice with a protect block in front of it, claim reads\n" +
		"(critical), new claims, reports (switched off when busy) and exports (shed first).",
	"demo carbon": "Runs the carbon story on 127.0.0.1 for 31s (SIGTERM or SIGINT ends it early): a claims service,\n" +
		"sluice in front of it reading a stand-in grid's carbon intensity every second (protect.signals), and\n" +
		"callers of claim reads (normal) and bulk exports (low). While the intensity is above 400 gCO2/kWh the\n" +
		"exports are shed (503); once it falls they are served again.",
	"version": "Prints the version (the one make build set, else the module version the go command recorded),\n" +
		"the VCS revision it was built from and the Go version; sluice --version and sluice -v print the same.",
	"check": "Validates the configuration file. Every problem is printed on stderr as FILE:line:col: what is\n" +
		"wrong (what would be accepted), exit status 1. A valid file prints what it does (settings, a table\n" +
		"of rules, each client's limits, the schedules' entries and which of them are in force now, until\n" +
		"when) on stdout, exit status 0; warnings (dangerous but working settings) go to stderr as\n" +
		"FILE:line:col: warning: ... and do not change the exit status.\n" +
		"With --explain 'METHOD PATH' it prints instead, as JSON (as GET /api/v1/explain answers), how the\n" +
		"file counts that request (the caller's --key, --ip and --header fields): the rules that match,\n" +
		"what each counts it as, the limit and its source, and what it would get from fresh counters;\n" +
		"exit status 2 for a request it cannot read.\n" +
		"With --format json the problems and warnings are printed instead on stdout as one JSON array of\n" +
		"{file, line, col, field, message, severity} (severity error or warning; [] for none), for CI;\n" +
		"the exit status is the same.",
	"serve": "Runs the gateway in front of the configured upstream, and the decision service of the decide\n" +
		"block (alone without an upstream), until SIGTERM or SIGINT. It reloads the\n" +
		"file on SIGHUP, on change and on POST /reload to the admin address; a bad file is refused and\n" +
		"the configuration in force stays. Logs are JSON on stderr, from --log-level on (debug, info,\n" +
		"warn or error; default info). On SIGTERM it logs how many requests are in flight, and drains them.",
}

// checkCommand validates a file (sluice check): every error as FILE:line:col: message, exit 1; or
// warnings on stderr and what the file does on stdout, exit 0. With
// --format json the errors or warnings are a JSON array on stdout instead.
func checkCommand(args []string, stdout, stderr io.Writer) int {
	var ex explainFlags
	format := "text"
	path, code, ok := configFlag("check", args, stdout, stderr, ex.define, func(fs *flag.FlagSet) {
		fs.StringVar(&format, "format", "text", "how problems and warnings are printed: text (FILE:line:col: ... on stderr) or json (a JSON array on stdout, for CI)")
	})
	if !ok {
		return code
	}
	switch {
	case format != "text" && format != "json":
		fmt.Fprintf(stderr, "sluice check: --format: unknown value %q (text or json)\n", format)
		return 2
	case format == "json" && ex.set():
		fmt.Fprintln(stderr, "sluice check: --explain prints JSON already: give it without --format json")
		return 2
	}
	cfg, err := loadChecked(path)
	if format == "json" {
		return writeProblems(stdout, path, cfg, err)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(stderr, warningText(w))
	}
	if ex.set() {
		return explainFile(cfg, ex, stdout, stderr)
	}
	p := cfg.Policy
	fmt.Fprintf(stdout, "%s: ok: %s, %s, %s", path, count(len(p.Rules), "rule"), count(len(p.Clients.List), "client"), count(len(p.Plans), "plan"))
	if n := len(cfg.Warnings); n > 0 {
		fmt.Fprintf(stdout, "; %s", count(n, "warning"))
	}
	fmt.Fprintln(stdout)
	if err := cfg.WriteSummary(stdout); err != nil {
		fmt.Fprintln(stderr, "sluice check:", err)
		return 1
	}
	if err := writeSchedules(stdout, cfg.Compiled, time.Now()); err != nil {
		fmt.Fprintln(stderr, "sluice check:", err)
		return 1
	}
	return 0
}

// loadChecked loads the file at path and, as serve reads them when it
// starts, the envoyproxy/ratelimit rule files it names.
func loadChecked(path string) (*config.File, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	if cfg.Decide != nil && len(cfg.Decide.EnvoyConfig) > 0 {
		if _, err := config.LoadEnvoyFor(cfg.Decide.EnvoyConfig, cfg.Store); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// warningText formats a configuration warning as check prints it:
// FILE:line:col: warning: message.
func warningText(w *config.Error) string {
	return strings.TrimSuffix(w.Error(), w.Msg) + "warning: " + w.Msg
}

// count writes n and a noun, in the plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// serve runs the gateway until SIGTERM or SIGINT, reloading on SIGHUP and
// on file change.
func serve(args []string, stdout, stderr io.Writer) int {
	level := logLevel(slog.LevelInfo)
	path, code, ok := configFlag("serve", args, stdout, stderr, func(fs *flag.FlagSet) {
		fs.Var(&level, "log-level", "the least level logged: debug, info, warn or error")
	})
	if !ok {
		return code
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.Level(level)}))
	slog.SetDefault(log) // what libraries write with package log is JSON too
	cfg, err := config.Load(path)
	if err != nil {
		gateway.LogConfigErrors(log, "configuration refused", path, err)
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
// (100) collects very often.
const gcPercent = 400

func serveConfig(cfg *config.File, log *slog.Logger) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	// Before any connection: a table grown under a crowd of them costs
	// threads for good (package fdtable). Room for every caller's
	// connection, an upstream one for each in flight, and the rest
	// (listeners, Redis, files).
	if err := fdtable.Reserve(2*cfg.Server.MaxConnections + 1024); err != nil {
		log.Warn("descriptor table not grown ahead", "err", err.Error())
	}
	g, err := gateway.New(gateway.Options{Config: cfg, Logger: log})
	if err != nil {
		return err
	}
	defer g.Close()
	svcs, err := listenDecide(cfg, g, log)
	if err != nil {
		return err
	}
	var ln net.Listener // the callers' side: none for the decision service alone
	if cfg.Upstream != nil {
		if ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			closeAll(svcs)
			return fmt.Errorf("listen: %w", err)
		}
	}
	adm, err := net.Listen("tcp", cfg.Admin)
	if err != nil {
		closeAll(svcs)
		if ln != nil {
			ln.Close()
		}
		return fmt.Errorf("admin listen: %w", err)
	}
	// The reloaders stop with ctx and are waited for before g.Close (the
	// defers run last first): no reload runs on a closed gateway.
	var reloaders sync.WaitGroup
	defer reloaders.Wait()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP) // before serving: a SIGHUP must never kill the process
	defer signal.Stop(hup)
	reloaders.Go(func() { reloadOnHangup(ctx, g, svcs, hup) })
	reloaders.Go(func() {
		if err := g.WatchConfig(ctx, 200*time.Millisecond); err != nil {
			log.Warn("not watching the configuration file", "err", err.Error())
		}
	})
	log.Info("sluice serving", append([]any{"version", buildinfo.Read().Version}, servingAttrs(cfg, ln, adm, svcs, g)...)...)
	err = runServices(ctx, cfg, g, ln, adm, svcs)
	log.Info("sluice stopped")
	return err
}

// servingAttrs are the addresses serve's first line names, its rules and
// the configuration's version.
func servingAttrs(cfg *config.File, ln, adm net.Listener, svcs []service, g *gateway.Gateway) []any {
	var attrs []any
	if ln != nil {
		attrs = append(attrs, "listen", ln.Addr().String(), "upstream", cfg.Upstream.Redacted())
		if len(cfg.Upstreams) > 1 {
			attrs = append(attrs, "upstreams", len(cfg.Upstreams))
		}
	}
	attrs = append(attrs, "admin", adm.Addr().String())
	for _, s := range svcs {
		attrs = append(attrs, s.name, s.ln.Addr().String())
	}
	return append(attrs, "rules", cfg.Compiled.Rules(), "config_version", g.ConfigVersion())
}

// logLevel is serve's --log-level: debug, info, warn or error.
type logLevel slog.Level

func (l *logLevel) String() string { return strings.ToLower(slog.Level(*l).String()) }

func (l *logLevel) Set(s string) error {
	levels := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}
	v, ok := levels[s]
	if !ok {
		return fmt.Errorf("unknown level %q (debug, info, warn or error)", s)
	}
	*l = logLevel(v)
	return nil
}

func reloadOnHangup(ctx context.Context, g *gateway.Gateway, svcs []service, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			_ = g.Reload() // a refused reload is logged by the gateway
			for _, s := range svcs {
				if s.reload != nil {
					_ = s.reload() // logged by the service
				}
			}
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

func runOverloadDemo(stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if _, err := demo.RunOverload(ctx, demo.OverloadOptions{}); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "sluice demo overload:", err)
		return 1
	}
	return 0
}

func runCarbonDemo(stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if _, err := demo.RunCarbon(ctx, demo.CarbonOptions{}); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "sluice demo carbon:", err)
		return 1
	}
	return 0
}
