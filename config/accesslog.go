package config

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// AccessLog is the access_log block: one JSON line per request the
// gateway answers, written by one goroutine from a bounded buffer so
// that the data path never waits for the log (a line that finds the
// buffer full is dropped and counted). Read at start: a reload keeps
// the access log the gateway started with.
type AccessLog struct {
	// Sample is the share of passed requests logged, 0 to 1; a request
	// sluice answered itself (refused, or its upstream failed) is always
	// logged. Default 1.
	Sample float64
	// Path is where lines go: "stdout" (the default), "stderr", or a
	// file, opened for appending and created if absent; a relative path
	// is read from the configuration file's directory.
	Path string
	// Buffer is how many lines may wait for the writer; a line that
	// finds it full is dropped. Default DefaultAccessLogBuffer.
	Buffer int
}

// Defaults of the access_log block.
const (
	DefaultAccessLogBuffer = 4096
	DefaultAccessLogPath   = "stdout"
	maxAccessLogBuffer     = 1 << 20
)

var accessLogFields = []string{"sample", "path", "buffer"}

// accessLog decodes the access_log block; nil when the file has none (no
// access log). An empty mapping (access_log: {}) logs with the defaults.
func (d *decoder) accessLog(n *yaml.Node, path string) *AccessLog {
	if isNull(n) {
		return nil
	}
	a := &AccessLog{Sample: 1, Path: DefaultAccessLogPath, Buffer: DefaultAccessLogBuffer}
	m := d.fields(n, path, "a mapping ("+strings.Join(accessLogFields, ", ")+")", accessLogFields)
	a.Sample = d.sample(m["sample"], join(path, "sample"))
	a.Path = d.str(m["path"], join(path, "path"), `a file, "stdout" or "stderr"`, DefaultAccessLogPath)
	if strings.TrimSpace(a.Path) == "" {
		d.fail(m["path"], join(path, "path"), `is empty (a file to append to, "stdout" or "stderr"; default stdout)`)
		a.Path = DefaultAccessLogPath
	}
	if a.Path != "stdout" && a.Path != "stderr" && !filepath.IsAbs(a.Path) && d.file != "" {
		a.Path = filepath.Join(filepath.Dir(d.file), a.Path) // as runtime.file: beside the configuration
	}
	a.Buffer = int(d.integer(m["buffer"], join(path, "buffer"), 1, maxAccessLogBuffer, DefaultAccessLogBuffer,
		"1 to 1048576 lines; default 4096"))
	return a
}

// sample decodes access_log.sample: a share of passed requests in [0, 1].
func (d *decoder) sample(n *yaml.Node, path string) float64 {
	s, ok := d.scalar(n, path, "a number from 0 to 1")
	if !ok {
		return 1
	}
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil || math.IsNaN(v) || strings.ContainsAny(s, "xXpP_"):
		d.fail(n, path, "%q is not a number (the share of passed requests logged, from 0 to 1, such as 0.1; default 1)", clip(s))
	case v < 0 || v > 1:
		d.fail(n, path, "%s is out of range (from 0 to 1: the share of passed requests logged, such as 0.1; default 1)", clip(s))
	default:
		return v
	}
	return 1
}
