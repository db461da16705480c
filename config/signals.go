package config

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Defaults and bounds of protect.signals.
const (
	DefaultSignalEvery   = 30 * time.Second
	MinSignalEvery       = time.Second
	DefaultSignalTimeout = 5 * time.Second // the default timeout, unless every is shorter
	maxSignalEvery       = 24 * time.Hour
	signalNameMaxLength  = 64
	signalAcceptedFields = "name, url, every, above, timeout"
)

var signalFields = []string{"name", "url", "every", "above", "timeout"}

// Signal is one entry of protect.signals: an outside measure (a grid's
// carbon intensity, a queue's depth) that sluice reads as a JSON number,
// or {"value": N}, with a GET of URL every Every. While the value read is
// above Above, sluice degrades as if the service were above protect's
// shed_from: degrade rules' requests and low-priority ones are refused
// 503. A read that fails keeps the last value for 3 × Every; after that
// the signal counts as not above.
type Signal struct {
	// Name names the signal in the overview, the metrics and the logs:
	// letters, digits, '_', '-', '.', at most 64; unique in the file.
	Name string
	// URL is read with GET: http or https, with a host.
	URL *url.URL
	// Every is how often it is read. Default 30s, at least 1s.
	Every time.Duration
	// Timeout bounds one read. Default the lesser of Every and 5s; at
	// most Every.
	Timeout time.Duration
	// Above is the line: while the value is above it, sluice degrades.
	Above float64
}

// Equal reports whether s and o are the same signal, read the same way.
func (s Signal) Equal(o Signal) bool {
	return s.Name == o.Name && s.URL.String() == o.URL.String() && s.Every == o.Every && s.Timeout == o.Timeout && s.Above == o.Above
}

// signals decodes protect.signals.
func (d *decoder) signals(n *yaml.Node, path string) []Signal {
	var out []Signal
	first := map[string]int{} // name: line of the first signal with it
	for i, sn := range d.list(n, path, "signals (mappings of "+signalAcceptedFields+")") {
		at := index(path, i)
		s, ok := d.signal(sn, at)
		if !ok {
			continue
		}
		if line, dup := first[s.Name]; dup {
			d.fail(d.nodes[join(at, "name")], join(at, "name"), "duplicate signal name %q (first at line %d; each signal needs its own name)", s.Name, line)
			continue
		}
		first[s.Name] = d.nodes[join(at, "name")].Line
		out = append(out, s)
	}
	return out
}

// signal decodes one entry of protect.signals; ok is false when a field
// is wrong (reported).
func (d *decoder) signal(n *yaml.Node, path string) (Signal, bool) {
	var s Signal
	m := d.fields(n, path, "a signal (a mapping of "+signalAcceptedFields+")", signalFields)
	if d.failed[path] {
		return s, false
	}
	if d.required(m, n, path, "name", "name: grid-carbon") {
		s.Name = d.signalName(m["name"], join(path, "name"))
	}
	if d.required(m, n, path, "url", "url: http://127.0.0.1:9100/carbon") {
		s.URL = d.signalURL(m["url"], join(path, "url"))
	}
	s.Every = DefaultSignalEvery
	if v, ok := d.durationIn(m["every"], join(path, "every"), func(v time.Duration) bool { return v >= MinSignalEvery && v <= maxSignalEvery },
		"such as 30s, 5m; default 30s", "at least 1s, at most 24h; default 30s"); ok {
		s.Every = v
	}
	s.Timeout = min(s.Every, DefaultSignalTimeout)
	if v, ok := d.durationIn(m["timeout"], join(path, "timeout"), func(v time.Duration) bool { return v > 0 && v <= s.Every },
		"such as 2s; default the lesser of every and 5s", fmt.Sprintf("more than 0, at most every (%v); default the lesser of every and 5s", s.Every)); ok {
		s.Timeout = v
	}
	if d.required(m, n, path, "above", "above: 400") {
		s.Above = d.signalAbove(m["above"], join(path, "above"))
	}
	failed := false
	for _, f := range signalFields {
		failed = failed || d.failed[join(path, f)]
	}
	return s, !failed && s.Name != "" && s.URL != nil
}

// signalName decodes a signal's name: like a rule's, letters, digits,
// '_', '-' and '.', at most 64.
func (d *decoder) signalName(n *yaml.Node, path string) string {
	s, ok := d.scalar(n, path, "a signal name")
	if !ok {
		return ""
	}
	if !validSignalName(s) {
		d.fail(n, path, "%q is not a valid name (letters, digits, '_', '-', '.'; at most %d; such as grid-carbon)", clip(s), signalNameMaxLength)
		return ""
	}
	return s
}

// validSignalName reports whether s is 1 to 64 letters, digits, '_', '-'
// or '.', as rule names are.
func validSignalName(s string) bool {
	if len(s) == 0 || len(s) > signalNameMaxLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// signalURL decodes a signal's URL: http or https with a host; a path and
// query are sent as written.
func (d *decoder) signalURL(n *yaml.Node, path string) *url.URL {
	s, ok := d.scalar(n, path, "a URL")
	if !ok {
		return nil
	}
	const want = "an http or https URL with a host, such as http://127.0.0.1:9100/carbon"
	u, err := url.Parse(s)
	shown := clip(withoutUserInfo(s))
	switch {
	case err != nil:
		d.fail(n, path, "%q is not a URL (%s)", shown, want)
	case u.Scheme != "http" && u.Scheme != "https":
		d.fail(n, path, "%q: scheme %q is not http or https (%s)", shown, clip(u.Scheme), want)
	case u.Hostname() == "" || !validHost(u.Hostname()):
		d.fail(n, path, "%q has no valid host (%s)", shown, want)
	case u.User != nil || u.Fragment != "" || u.Opaque != "":
		d.fail(n, path, "%q: user info and fragment are not used (%s, optionally with a path and a query)", shown, want)
	default:
		return u
	}
	return nil
}

// signalAbove decodes a signal's line: a finite number.
func (d *decoder) signalAbove(n *yaml.Node, path string) float64 {
	s, ok := d.scalar(n, path, "a number")
	if !ok {
		return 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || strings.ContainsAny(s, "xXpP_") {
		d.fail(n, path, "%q is not a number (the line above which sluice degrades, such as 400 or 0.75)", clip(s))
		return 0
	}
	return v
}

// signalsSummary is a line on protect.signals, or none.
func signalsSummary(signals []Signal) string {
	if len(signals) == 0 {
		return ""
	}
	parts := make([]string, len(signals))
	for i, s := range signals {
		parts[i] = fmt.Sprintf("%s above %v (%s every %v)", s.Name, s.Above, s.URL.Redacted(), s.Every)
	}
	return "signals (degrade while above): " + strings.Join(parts, ", ") + "\n"
}
