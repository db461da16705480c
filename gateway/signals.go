package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
)

// protect.signals: while Run runs, each signal is read every `every` (a
// GET of its URL answering a JSON number or {"value": N}); while its value
// is above its line, the gateway's Pressure has the source
// "signal:NAME" on, and the requests of degrade rules and low-priority
// ones are refused 503 as if the service were above shed_from
// (decision.Pressure). A read that fails keeps the last value for
// staleAfter intervals; from then on the signal is stale and counts as
// not above. The overview, the metrics and the log say so.

// staleAfter is how many intervals a signal's last good value is kept
// while its reads fail.
const staleAfter = 3

// maxSignalBody is the most a signal's answer may hold.
const maxSignalBody = 64 << 10

// signalSet is the signals being read: one signalWatch each, polled by a
// goroutine of its own between startSignals and stopSignals (Run), and
// restarted by reloadSignals when the list changes.
type signalSet struct {
	mu      sync.Mutex
	running bool // between startSignals and stopSignals
	watches []*signalWatch
	cancel  context.CancelFunc // ends the polls; nil while none run
	polls   sync.WaitGroup
	client  *http.Client // its own transport, whose idle connections stopSignals closes
}

// signalWatch is one signal and what was read of it.
type signalWatch struct {
	sig config.Signal

	mu     sync.Mutex
	since  time.Time // when reading began: a signal never read goes stale from here
	has    bool      // a value was read
	value  float64   // the last value read
	read   time.Time // when it was read
	err    string    // why the last read failed; "" when it did not
	errors uint64    // reads that failed
	on     bool      // counts as above: has, not stale, value > Above
	stale  bool      // reads have failed for staleAfter intervals
}

// source is the signal's name in the gateway's Pressure.
func (w *signalWatch) source() string { return "signal:" + w.sig.Name }

// startSignals begins reading the signals of the configuration in force.
// Run calls it, and stopSignals when it ends.
func (g *Gateway) startSignals() {
	s := &g.signals
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = true
	s.begin(g, g.config().Signals)
}

// stopSignals stops reading the signals and waits for their polls to
// end; their sources go off (the gateway is no longer serving).
func (g *Gateway) stopSignals() {
	s := &g.signals
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = false
	s.end()
	for _, w := range s.watches {
		g.pressure.Set(w.source(), false)
	}
	s.watches = nil
}

// reloadSignals puts cfg's signals in force while Run runs: nothing
// changes when they are the same; otherwise the polls restart with the
// new list, at once. A signal kept by name and URL keeps what was read of
// it (its value, its staleness); one removed goes off.
func (g *Gateway) reloadSignals(cfg *config.File) {
	s := &g.signals
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running || slices.EqualFunc(s.list(), cfg.Signals, config.Signal.Equal) {
		return
	}
	s.end()
	s.begin(g, cfg.Signals)
}

// list is the signals being read. The caller holds s.mu.
func (s *signalSet) list() []config.Signal {
	out := make([]config.Signal, len(s.watches))
	for i, w := range s.watches {
		out[i] = w.sig
	}
	return out
}

// begin starts a poll for each signal of list, carrying over what was
// read of the watches of the same name and URL; the others' sources go
// off. The caller holds s.mu, and no poll runs.
func (s *signalSet) begin(g *Gateway, list []config.Signal) {
	if s.client == nil {
		s.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	now := g.opts.Clock.Now()
	old := s.watches
	s.watches = make([]*signalWatch, len(list))
	for i, sig := range list {
		w := &signalWatch{sig: sig, since: now}
		for _, o := range old {
			if o.sig.Name == sig.Name && o.sig.URL.String() == sig.URL.String() {
				w.has, w.value, w.read, w.err, w.errors, w.stale, w.since = o.has, o.value, o.read, o.err, o.errors, o.stale, o.since
				w.on = o.on && w.has && w.value > sig.Above
			}
		}
		s.watches[i] = w
	}
	for _, o := range old {
		if i := slices.IndexFunc(s.watches, func(w *signalWatch) bool { return w.sig.Name == o.sig.Name }); i < 0 || !s.watches[i].on {
			g.pressure.Set(o.source(), false)
		}
	}
	if len(list) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	for _, w := range s.watches {
		tick := g.opts.Clock.NewTicker(w.sig.Every) // made here, so that it ticks from now on
		s.polls.Go(func() { w.poll(ctx, g, s.client, tick) })
	}
}

// end stops the polls and waits for them. The caller holds s.mu.
func (s *signalSet) end() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.polls.Wait()
	s.cancel = nil
	s.client.CloseIdleConnections()
}

// poll reads w at once, then at every tick until ctx ends, then stops
// tick.
func (w *signalWatch) poll(ctx context.Context, g *Gateway, client *http.Client, tick clock.Ticker) {
	defer tick.Stop()
	for {
		v, err := readSignal(ctx, client, w.sig)
		if ctx.Err() != nil {
			return // stopping: what the read found is not the signal's fault
		}
		w.record(g, g.opts.Clock.Now(), v, err)
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
	}
}

// record takes a read's result at now into w, puts w's source in the
// Pressure and logs what changed: the signal above its line or back
// below, a first failed read, stale, read again.
func (w *signalWatch) record(g *Gateway, now time.Time, v float64, err error) {
	w.mu.Lock()
	wasOn, wasStale, wasFailing := w.on, w.stale, w.err != ""
	if err == nil {
		w.has, w.value, w.read, w.err, w.stale = true, v, now, "", false
	} else {
		w.err, w.errors = err.Error(), w.errors+1
		w.stale = !now.Before(cmpTime(w.has, w.read, w.since).Add(staleAfter * w.sig.Every))
	}
	w.on = w.has && !w.stale && w.value > w.sig.Above
	on, stale, value, failing := w.on, w.stale, w.value, w.err != ""
	w.mu.Unlock()

	g.pressure.Set(w.source(), on)
	name, above := w.sig.Name, w.sig.Above
	switch {
	case failing && !wasFailing:
		g.log.Warn("signal read failed; its last value is kept for 3 intervals", "signal", name, "err", err.Error(),
			"every", w.sig.Every.String())
	case !failing && wasFailing:
		g.log.Info("signal read again", "signal", name, "value", value)
	}
	if stale && !wasStale {
		g.log.Warn("signal stale: unreadable for 3 intervals, it counts as not above its line", "signal", name, "err", err.Error())
	}
	switch {
	case on && !wasOn:
		g.log.Warn("signal above its line: degrade rules and low-priority requests are refused", "signal", name,
			"value", value, "above", above)
	case !on && wasOn:
		g.log.Info("signal no longer above its line: degrading for it ends", "signal", name, "value", value,
			"above", above, "stale", stale)
	}
}

// cmpTime is read when has is true, else since.
func cmpTime(has bool, read, since time.Time) time.Time {
	if has {
		return read
	}
	return since
}

// readSignal GETs sig's URL, within its timeout, and reads the value its
// answer holds: a JSON number, or an object with a number "value". Its
// error never names the URL (which may hold a token in its query).
func readSignal(ctx context.Context, client *http.Client, sig config.Signal) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, sig.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, sig.URL.String(), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return 0, fmt.Errorf("no answer within its timeout (%v)", sig.Timeout)
		case errors.As(err, &ue):
			return 0, ue.Err
		}
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("answered %d, not 200", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSignalBody+1))
	switch {
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return 0, fmt.Errorf("no whole answer within its timeout (%v)", sig.Timeout)
	case err != nil:
		return 0, fmt.Errorf("reading the answer: %w", err)
	case len(body) > maxSignalBody:
		return 0, errors.New("the answer is over 64 KiB")
	}
	return signalValue(body)
}

// signalValue reads a signal's answer: a JSON number, or an object whose
// "value" is one (other fields are ignored).
func signalValue(body []byte) (float64, error) {
	body = bytes.TrimSpace(body)
	var v float64
	switch {
	case len(body) > 0 && body[0] == '{':
		var obj struct {
			Value *float64 `json:"value"`
		}
		if json.Unmarshal(body, &obj) == nil && obj.Value != nil {
			return *obj.Value, nil
		}
	case len(body) > 0 && (body[0] == '-' || body[0] >= '0' && body[0] <= '9'):
		if json.Unmarshal(body, &v) == nil {
			return v, nil
		}
	}
	return 0, errors.New(`the answer is not a JSON number nor {"value": N}`)
}

// signalView is one signal as the overview shows it.
type signalView struct {
	Name  string   `json:"name"`
	Value *float64 `json:"value"` // the last value read; null before one is
	Above float64  `json:"above"` // the line
	On    bool     `json:"on"`    // counts as above: sluice degrades for it
	Read  string   `json:"read"`  // when Value was read, RFC 3339; "" before
	Stale bool     `json:"stale"` // unreadable for 3 intervals: counts as not above
	Error string   `json:"error"` // why the last read failed; "" when it did not
}

// degradedView is whether the gateway degrades now, and for whom.
type degradedView struct {
	On      bool     `json:"on"`
	Sources []string `json:"sources"` // "switch", "signal:NAME", sorted
}

// signalsOverview is the overview's signals, in the file's order.
func (g *Gateway) signalsOverview() []signalView {
	s := &g.signals
	s.mu.Lock()
	watches := s.watches
	s.mu.Unlock()
	out := make([]signalView, 0, len(watches))
	for _, w := range watches {
		out = append(out, w.view())
	}
	return out
}

// view is w now.
func (w *signalWatch) view() signalView {
	w.mu.Lock()
	defer w.mu.Unlock()
	v := signalView{Name: w.sig.Name, Above: w.sig.Above, On: w.on, Stale: w.stale, Error: w.err}
	if w.has {
		v.Value, v.Read = new(w.value), w.read.UTC().Format(time.RFC3339)
	}
	return v
}

// degradedOverview is the overview's degraded: the Pressure's sources.
func (g *Gateway) degradedOverview() degradedView {
	src := g.pressure.Sources()
	if src == nil {
		src = []string{}
	}
	return degradedView{On: len(src) > 0, Sources: src}
}

var (
	signalValueDesc = prometheus.NewDesc("sluice_signal_value",
		"The last value read of each of protect.signals (kept while reads fail); absent until one is read.", []string{"signal"}, nil)
	signalAboveDesc = prometheus.NewDesc("sluice_signal_above",
		"1 while the signal counts as above its line, so degrade rules and low-priority requests are refused; 0 below it, stale or never read.", []string{"signal"}, nil)
	signalStaleDesc = prometheus.NewDesc("sluice_signal_stale",
		"1 while the signal has been unreadable for 3 of its intervals: it then counts as not above.", []string{"signal"}, nil)
	signalErrorsDesc = prometheus.NewDesc("sluice_signal_errors_total",
		`Reads of the signal that failed: no answer within its timeout, refused, a status not 200, an answer that is not a JSON number nor {"value": N}, or over 64 KiB.`, []string{"signal"}, nil)
)

// describeSignals and collectSignals are the signals' series, read when
// metrics are scraped (throttleCollector).
func describeSignals(ch chan<- *prometheus.Desc) {
	ch <- signalValueDesc
	ch <- signalAboveDesc
	ch <- signalStaleDesc
	ch <- signalErrorsDesc
}

func collectSignals(ch chan<- prometheus.Metric, g *Gateway) {
	s := &g.signals
	s.mu.Lock()
	watches := s.watches
	s.mu.Unlock()
	bit := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	for _, w := range watches {
		w.mu.Lock()
		name := w.sig.Name
		if w.has {
			ch <- prometheus.MustNewConstMetric(signalValueDesc, prometheus.GaugeValue, w.value, name)
		}
		ch <- prometheus.MustNewConstMetric(signalAboveDesc, prometheus.GaugeValue, bit(w.on), name)
		ch <- prometheus.MustNewConstMetric(signalStaleDesc, prometheus.GaugeValue, bit(w.stale), name)
		ch <- prometheus.MustNewConstMetric(signalErrorsDesc, prometheus.CounterValue, float64(w.errors), name)
		w.mu.Unlock()
	}
}
