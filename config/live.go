package config

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-rl/sluice/live"
)

// Live is what the operators' view keeps (the live block): how many
// callers each rule lists and the period the findings are computed over.
// The block is optional.
type Live struct {
	// Top is how many callers each rule lists as most refused, and as
	// closest to its limit (live.top). Default live.DefaultTop (100),
	// 1 to live.MaxTop.
	Top int
	// Period is the sliding period of the findings (live.period). Default
	// live.DefaultPeriod (10m), from 1m to 24h.
	Period time.Duration
}

// DefaultLive returns the settings of a file without a live block.
func DefaultLive() Live { return Live{Top: live.DefaultTop, Period: live.DefaultPeriod} }

// Options returns l as package live's options.
func (l Live) Options() live.Options { return live.Options{Top: l.Top, Period: l.Period} }

// summary is check's line for the live block, "" for the defaults.
func (l Live) summary() string {
	if l == DefaultLive() {
		return ""
	}
	return fmt.Sprintf("live: %d callers listed per rule and sketch; findings over %v\n", l.Top, l.Period)
}

var liveFields = []string{"top", "period"}

// live decodes the live block.
func (d *decoder) live(n *yaml.Node, path string) Live {
	l := DefaultLive()
	m := d.fields(n, path, "a mapping ("+strings.Join(liveFields, ", ")+")", liveFields)
	l.Top = int(d.integer(m["top"], join(path, "top"), 1, live.MaxTop, live.DefaultTop,
		fmt.Sprintf("1 to %d callers per rule; default %d", live.MaxTop, live.DefaultTop)))
	if v, ok := d.durationIn(m["period"], join(path, "period"),
		func(v time.Duration) bool { return v >= live.MinPeriod && v <= live.MaxPeriod },
		"such as 10m, 1h; default 10m", "1m to 24h; default 10m"); ok {
		l.Period = v
	}
	return l
}
