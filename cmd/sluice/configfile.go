package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// EnvConfig names the environment variable serve and check read the
// configuration file's path from when none is given.
const EnvConfig = "SLUICE_CONFIG"

// defaultConfigFile is the file serve and check read when no file is given
// and EnvConfig is not set, if it exists.
const defaultConfigFile = "sluice.yaml"

// configFlag parses a command's flags and its configuration file: the
// argument FILE or --config FILE, else $SLUICE_CONFIG, else ./sluice.yaml
// if it exists. Flags may come before or after the file. With ok false
// the command is over and code is its exit status: 0 after -h/--help (on
// stdout), 2 after a usage error, which says what was wrong (on stderr).
// more, if given, defines the command's other flags.
func configFlag(name string, args []string, stdout, stderr io.Writer, more ...func(*flag.FlagSet)) (path string, code int, ok bool) {
	fs := flag.NewFlagSet("sluice "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg := fs.String("config", "", "configuration file (YAML), as the argument FILE is")
	for _, f := range more {
		f(fs)
	}
	help := func(w io.Writer) {
		fmt.Fprintf(w, "usage: sluice %s [--config] FILE%s\n\n%s\n\n%s\n\nflags:\n", name, usageTail[name], commandHelp[name], fileHelp)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	files, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		help(stdout)
		return "", 0, false
	}
	if err == nil && *cfg != "" {
		files = append([]string{*cfg}, files...)
	}
	if err == nil && len(files) > 1 {
		err = fmt.Errorf("one configuration file, not %d (%s)", len(files), strings.Join(files, ", "))
	}
	if err == nil && len(files) == 0 {
		var p string
		p, err = defaultConfig()
		files = []string{p}
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice %s: %v\n\n", name, err)
		help(stderr)
		return "", 2, false
	}
	return files[0], 0, true
}

// fileHelp says where serve and check find their file.
const fileHelp = "The file is the argument FILE or --config FILE; without either, $" + EnvConfig + " names it, else\n" +
	"./" + defaultConfigFile + " is read if it exists."

// parseInterleaved parses args with fs, flags before and after the
// arguments that are not flags, and returns those arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return rest, nil
		}
		rest, args = append(rest, fs.Arg(0)), fs.Args()[1:]
	}
}

// defaultConfig is the file to read when none is given: $SLUICE_CONFIG,
// else ./sluice.yaml if it exists. The error says what was looked for.
func defaultConfig() (string, error) {
	if p := os.Getenv(EnvConfig); p != "" {
		return p, nil
	}
	if _, err := os.Stat(defaultConfigFile); err == nil {
		return defaultConfigFile, nil
	}
	return "", fmt.Errorf("no configuration file: give one (FILE or --config FILE), set %s, or put a %s in the current directory", EnvConfig, defaultConfigFile)
}
