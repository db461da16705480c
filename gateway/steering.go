package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/config/storeopen"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/steering"
	"github.com/sluice-rl/sluice/store/failover"
	"github.com/sluice-rl/sluice/store/redis"
)

// The operators' run-time changes (package steering): overrides and blocks
// put in force on top of the file's policy (and its schedule), and the
// degrade switch, kept in Redis for every instance or in runtime.file.
// The policy requests are decided under is the file's, at the schedule's
// entry in force, with the overrides applied (effective); it is rebuilt
// when the overrides change, a schedule entry begins or ends, and on
// reload.

// maxSteeringBody bounds a change's request body.
const maxSteeringBody = 64 << 10

// steerStartWait bounds the first read of the runtime state when the
// gateway starts: a Redis that does not answer delays no start longer.
const steerStartWait = 2 * time.Second

// inForce is the runtime state the gateway applies, as policy overrides.
type inForce struct {
	state     steering.State
	overrides []policy.Override
}

// newSteering makes the gateway's steering manager, on the Redis the
// counters are shared on or, with the memory store, on runtime.file.
func (g *Gateway) newSteering(cfg *config.File) *steering.Manager {
	var backend steering.Backend
	if rs := g.sharedRedis(); rs != nil {
		backend = steering.NewRedisBackend(rs)
	} else {
		file := cfg.Runtime.File
		if file == "" { // a File built in code
			file = config.DefaultRuntimeFile(cfg.Path)
		}
		backend = steering.NewFileBackend(file, g.opts.Clock)
	}
	return steering.New(steering.Options{Backend: backend, Clock: g.opts.Clock, Check: g.checkSteering, Apply: g.applySteering,
		AuditSize: cfg.Runtime.Audit, MaxTTL: cfg.Runtime.MaxTTL, Logger: g.log})
}

// sharedRedis is the Redis store the counters are shared on, nil with the
// memory store.
func (g *Gateway) sharedRedis() steering.RedisStore {
	st := g.store
	if fs, ok := st.(*failover.Store); ok {
		st = fs.Shared()
	}
	rs, _ := st.(steering.RedisStore)
	return rs
}

// toOverride reads one entry of the runtime state as a policy override.
func toOverride(e steering.Entry) (policy.Override, error) {
	client, addr, err := policy.ParseTarget(e.Target)
	if err != nil {
		return policy.Override{}, &steering.FieldError{Field: "target", Msg: err.Error()}
	}
	o := policy.Override{Client: client, Addr: addr, Rule: e.Rule, Burst: e.Burst, Block: e.Block, Until: e.Expires}
	if !e.Block {
		if o.Rate, err = config.ParseRate(e.Rate); err != nil {
			return policy.Override{}, &steering.FieldError{Field: "rate", Msg: err.Error()}
		}
	}
	return o, nil
}

// overridesOf turns st into policy overrides, leaving out (and returning
// the error of) entries that cannot be read; index maps each override
// back to its entry.
func overridesOf(st steering.State) (ovs []policy.Override, index []int, bad map[int]error) {
	for i, e := range st.Overrides {
		o, err := toOverride(e)
		if err != nil {
			if bad == nil {
				bad = map[int]error{}
			}
			bad[i] = err
			continue
		}
		ovs, index = append(ovs, o), append(index, i)
	}
	return ovs, index, bad
}

// checkSteering refuses a change whose entry the policy in force cannot
// apply: an unknown client or rule, a rate the rule's algorithm refuses, a
// cost the new limit never allows.
func (g *Gateway) checkSteering(next steering.State, entry steering.Entry) error {
	at := -1
	for i, e := range next.Overrides {
		if e.Target == entry.Target && e.Rule == entry.Rule {
			at = i
		}
	}
	if at < 0 { // a removal or the degrade switch: nothing new to check
		return nil
	}
	ovs, index, bad := overridesOf(next)
	if err := bad[at]; err != nil {
		return err
	}
	snap := g.snap.Load()
	pol, errs := snap.base.WithOverrides(ovs)
	for _, oe := range errs {
		if index[oe.Index] == at {
			return &steering.FieldError{Field: oe.Err.Path, Msg: oe.Err.Msg}
		}
	}
	if !entry.Block {
		if why := config.LogBoundProblem(snap.cfg, pol); why != "" {
			return &steering.FieldError{Field: "rate", Msg: why}
		}
	}
	return nil
}

// applySteering puts st in force: its overrides on the policy, its degrade
// switch on the Pressure.
func (g *Gateway) applySteering(st steering.State) {
	ovs, _, bad := overridesOf(st)
	for i, err := range bad {
		g.log.Warn("runtime override left out", "target", st.Overrides[i].Target, "rule", st.Overrides[i].Rule, "err", err.Error())
	}
	g.steered.Store(&inForce{state: st, overrides: ovs})
	g.pressure.Set("switch", st.Degrade != nil)
	if g.snap.Load() != nil {
		g.refreshPolicy()
	}
}

// effective is the policy requests are decided under for cfg now: the
// file's at the schedule entries in force (base), with the runtime
// overrides applied; next is when a schedule entry next begins or ends
// (zero: never), ignored the overrides the policy cannot apply.
func (g *Gateway) effective(cfg *config.File) (base, eff *policy.Compiled, next time.Time, ignored []string) {
	base, next = cfg.Compiled.At(g.opts.Clock.Now())
	cur := g.steered.Load()
	if cur == nil || len(cur.overrides) == 0 {
		return base, base, next, nil
	}
	eff, errs := base.WithOverrides(cur.overrides)
	for _, oe := range errs {
		o := cur.overrides[oe.Index]
		ignored = append(ignored, fmt.Sprintf("%s%s: %s", o.Target(), ruleSuffix(o.Rule), oe.Err.Error()))
	}
	return base, eff, next, ignored
}

func ruleSuffix(rule string) string {
	if rule == "" {
		return ""
	}
	return " on rule " + rule
}

// refreshPolicy rebuilds the policy in force from the file in force, now:
// the schedule's entries and the runtime overrides. Requests that start
// afterwards are decided under it; counters are kept, as by a reload.
func (g *Gateway) refreshPolicy() {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	prev := g.snap.Load()
	next := *prev
	next.base, next.front.Settings.Policy, next.nextChange, next.ignored = g.effective(prev.cfg)
	for _, s := range next.ignored {
		if !slices.Contains(prev.ignored, s) {
			g.log.Warn("runtime override does not apply to the configuration in force", "override", s)
		}
	}
	g.setSnapshot(&next)
	g.live.Load().SetPolicy(next.front.Settings.Policy)
}

// followSchedule rebuilds the policy if a schedule entry has begun or
// ended by now (Run's ticker calls it every second).
func (g *Gateway) followSchedule(now time.Time) {
	if next := g.snap.Load().nextChange; next.IsZero() || now.Before(next) {
		return
	}
	g.refreshPolicy()
	g.log.Info("a schedule entry began or ended; the limits in force follow it", "next_change", g.snap.Load().nextChange)
}

// author names who made a change: the admin token's name, or without a
// token the admin peer's address, and in both cases the peer.
func (g *Gateway) author(r *http.Request) string {
	peer := r.RemoteAddr
	if h, _, err := net.SplitHostPort(peer); err == nil {
		peer = h
	}
	if name := tokenName(r); name != "" {
		return name + " from " + peer
	}
	return "admin peer " + peer
}

// overrideBody is the body of PUT /api/v1/overrides/{target}.
type overrideBody struct {
	Rule   string `json:"rule"`
	Rate   string `json:"rate"`
	Burst  *int64 `json:"burst"`
	Block  bool   `json:"block"`
	TTL    string `json:"ttl"`
	Reason string `json:"reason"`
}

// degradeBody is the body of PUT /api/v1/degrade.
type degradeBody struct {
	On     *bool  `json:"on"`
	TTL    string `json:"ttl"`
	Reason string `json:"reason"`
}

// readBody decodes a change's JSON body into v: at most 64 KiB, one
// object, no unknown fields.
func readBody(r *http.Request, v any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxSteeringBody+1))
	if err != nil {
		return &steering.FieldError{Field: "body", Msg: "cannot be read: " + err.Error()}
	}
	if len(data) > maxSteeringBody {
		return &steering.FieldError{Field: "body", Msg: fmt.Sprintf("more than %d KiB (a change is a small JSON object)", maxSteeringBody>>10)}
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &steering.FieldError{Field: "body", Msg: "not the JSON object expected: " + err.Error()}
	}
	if dec.More() {
		return &steering.FieldError{Field: "body", Msg: "more than one JSON value (send one object)"}
	}
	return nil
}

// parseTTL reads a change's ttl: "" is none (until removed).
func parseTTL(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, &steering.FieldError{Field: "ttl", Msg: fmt.Sprintf("%q is not a duration (such as 30m, 2h; or leave it out: until removed)", s)}
	case d <= 0:
		return 0, &steering.FieldError{Field: "ttl", Msg: fmt.Sprintf("%s is not more than 0 (such as 30m, 2h; or leave it out: until removed)", s)}
	}
	return d, nil
}

// putOverride answers PUT /api/v1/overrides/{target}.
func (g *Gateway) putOverride(w http.ResponseWriter, r *http.Request) {
	target := r.PathValue("target")
	var body overrideBody
	if err := readBody(r, &body); err != nil {
		writeChangeError(w, err)
		return
	}
	ch, err := changeOf(target, body)
	if err == nil {
		ch.Author = g.author(r)
		var e steering.Entry
		if e, err = g.steer.Put(r.Context(), ch); err == nil {
			st, _ := g.steer.State()
			writeJSON(w, http.StatusOK, map[string]any{"version": st.Version, "override": entryJSON(e, g.steer.Now())})
			return
		}
	}
	writeChangeError(w, err)
}

// changeOf checks a PUT's body for target and makes it a change.
func changeOf(target string, b overrideBody) (steering.Change, error) {
	if _, _, err := policy.ParseTarget(target); err != nil {
		return steering.Change{}, &steering.FieldError{Field: "target", Msg: err.Error()}
	}
	ttl, err := parseTTL(b.TTL)
	if err != nil {
		return steering.Change{}, err
	}
	ch := steering.Change{Target: target, Rule: b.Rule, Rate: b.Rate, Block: b.Block, TTL: ttl, Reason: strings.TrimSpace(b.Reason)}
	if b.Burst != nil {
		ch.Burst = *b.Burst
	}
	switch {
	case b.Block && (b.Rule != "" || b.Rate != "" || b.Burst != nil):
		return ch, &steering.FieldError{Field: "block", Msg: "a block refuses the target on every rule: send {\"block\": true, \"ttl\": ..., \"reason\": ...} without rule, rate or burst"}
	case !b.Block && b.Rule == "":
		return ch, &steering.FieldError{Field: "rule", Msg: "missing: the rule whose limit to override (or \"block\": true for every rule)"}
	case !b.Block && b.Rate == "":
		return ch, &steering.FieldError{Field: "rate", Msg: "missing: the new rate, such as \"20/m\""}
	case b.Burst != nil && *b.Burst < 1:
		return ch, &steering.FieldError{Field: "burst", Msg: fmt.Sprintf("%d is not 1 or more (a bucket size; leave it out to scale the rule's burst to the rate)", *b.Burst)}
	}
	if !b.Block {
		if _, err := config.ParseRate(b.Rate); err != nil {
			return ch, &steering.FieldError{Field: "rate", Msg: err.Error()}
		}
	}
	if len(ch.Reason) > 1000 {
		return ch, &steering.FieldError{Field: "reason", Msg: fmt.Sprintf("%d bytes: at most 1000", len(ch.Reason))}
	}
	return ch, nil
}

// deleteOverride answers DELETE /api/v1/overrides/{target}[?rule=R].
func (g *Gateway) deleteOverride(w http.ResponseWriter, r *http.Request) {
	q, err := singleParams(r.URL.RawQuery, "rule", "reason")
	if err != nil {
		writeProblem(w, http.StatusBadRequest, err.Error())
		return
	}
	target := r.PathValue("target")
	gone, err := g.steer.Remove(r.Context(), target, q["rule"], g.author(r), q["reason"])
	if err != nil {
		writeChangeError(w, err)
		return
	}
	now := g.steer.Now()
	out := make([]overrideJSON, len(gone))
	for i, e := range gone {
		out[i] = entryJSON(e, now)
	}
	st, _ := g.steer.State()
	writeJSON(w, http.StatusOK, map[string]any{"version": st.Version, "removed": out})
}

// putDegrade answers PUT /api/v1/degrade.
func (g *Gateway) putDegrade(w http.ResponseWriter, r *http.Request) {
	var body degradeBody
	if err := readBody(r, &body); err != nil {
		writeChangeError(w, err)
		return
	}
	if body.On == nil {
		writeChangeError(w, &steering.FieldError{Field: "on", Msg: "missing: true to degrade every instance, false to stop"})
		return
	}
	ttl, err := parseTTL(body.TTL)
	if err == nil {
		_, err = g.steer.SetDegrade(r.Context(), *body.On, ttl, strings.TrimSpace(body.Reason), g.author(r))
	}
	if err != nil {
		writeChangeError(w, err)
		return
	}
	g.getDegrade(w, r)
}

// getDegrade answers GET /api/v1/degrade: the switch in force.
func (g *Gateway) getDegrade(w http.ResponseWriter, _ *http.Request) {
	st, _ := g.steer.State()
	writeJSON(w, http.StatusOK, map[string]any{"version": st.Version, "degrade": degradeJSON(st.Degrade, g.steer.Now())})
}

// getOverrides answers GET /api/v1/overrides.
func (g *Gateway) getOverrides(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, g.runtimeSummary())
}

// getAudit answers GET /api/v1/audit[?limit=N].
func (g *Gateway) getAudit(w http.ResponseWriter, r *http.Request) {
	q, err := singleParams(r.URL.RawQuery, "limit")
	if err != nil {
		writeProblem(w, http.StatusBadRequest, err.Error())
		return
	}
	n := 100
	if s := q["limit"]; s != "" {
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			writeProblem(w, http.StatusBadRequest, fmt.Sprintf("limit %q is not a whole number of 1 or more (the newest records to list; default 100)", s))
			return
		}
	}
	recs, err := g.steer.Audit(r.Context(), n)
	if err != nil {
		writeChangeError(w, err)
		return
	}
	if recs == nil {
		recs = []steering.Record{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"records": recs})
}

// writeChangeError answers a refused change: 422 naming the field, 404
// for a removal of nothing, 503 when the runtime store cannot be reached.
func writeChangeError(w http.ResponseWriter, err error) {
	var fe *steering.FieldError
	var u *steering.UnavailableError
	switch {
	case errors.As(err, &fe):
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusUnprocessableEntity)
		b, _ := json.Marshal(map[string]any{"type": "about:blank", "title": "Unprocessable Entity", "status": http.StatusUnprocessableEntity,
			"detail": fe.Field + ": " + fe.Msg + "; nothing changed", "field": fe.Field})
		_, _ = w.Write(b)
	case errors.Is(err, steering.ErrNotFound):
		writeProblem(w, http.StatusNotFound, "no override or block of that target (and rule) is in force: GET /api/v1/overrides lists them")
	case errors.As(err, &u):
		w.Header().Set("Retry-After", "1")
		writeProblem(w, http.StatusServiceUnavailable, u.Error())
	default:
		writeProblem(w, http.StatusInternalServerError, err.Error())
	}
}

// overrideJSON is one override or block as the API shows it.
type overrideJSON struct {
	steering.Entry
	ExpiresInS *float64 `json:"expires_in_s,omitempty"`
}

func entryJSON(e steering.Entry, now time.Time) overrideJSON {
	out := overrideJSON{Entry: e}
	if !e.Expires.IsZero() {
		s := max(seconds(e.Expires.Sub(now)), 0)
		out.ExpiresInS = &s
	}
	return out
}

// degradeOut is the degrade switch as the API shows it.
type degradeOut struct {
	On bool `json:"on"`
	*steering.Degrade
	ExpiresInS *float64 `json:"expires_in_s,omitempty"`
}

func degradeJSON(d *steering.Degrade, now time.Time) degradeOut {
	out := degradeOut{On: d != nil, Degrade: d}
	if d != nil && !d.Expires.IsZero() {
		s := max(seconds(d.Expires.Sub(now)), 0)
		out.ExpiresInS = &s
	}
	return out
}

// runtimeJSON is the runtime state in force, for GET /api/v1/overrides
// and the overview.
type runtimeJSON struct {
	steering.Status
	Overrides []overrideJSON `json:"overrides"`
	Degrade   degradeOut     `json:"degrade"`
	// Ignored are the overrides the configuration in force cannot apply
	// (a rule or client a reload removed), each with why.
	Ignored []string `json:"ignored,omitempty"`
}

// runtimeSummary is the runtime state in force.
func (g *Gateway) runtimeSummary() runtimeJSON {
	st, status := g.steer.State()
	now := g.steer.Now() // expiries are on the store's clock
	out := runtimeJSON{Status: status, Overrides: make([]overrideJSON, len(st.Overrides)), Degrade: degradeJSON(st.Degrade, now),
		Ignored: g.snap.Load().ignored}
	for i, e := range st.Overrides {
		out.Overrides[i] = entryJSON(e, now)
	}
	return out
}

// LoadRuntime reads the run-time state cfg's instances apply: from Redis
// with store: redis, else from runtime.file. It is for programs that do
// not run a gateway (sluice check --explain).
func LoadRuntime(ctx context.Context, cfg *config.File) (steering.State, error) {
	if cfg.Store.Type != "redis" {
		st, _, err := steering.NewFileBackend(cmp.Or(cfg.Runtime.File, config.DefaultRuntimeFile(cfg.Path)), nil).Load(ctx)
		return st, err
	}
	rs, err := redis.New(ctx, storeopen.RedisOptions(cfg.Store))
	if err != nil {
		return steering.State{}, err
	}
	defer rs.Close()
	st, now, err := steering.NewRedisBackend(rs).Load(ctx)
	st, _ = st.Expired(now)
	return st, err
}

// PolicyInForce is cfg's policy as an instance applies it at now with the
// run-time state st: the schedule's entries in force, then st's overrides;
// ignored lists those the policy cannot apply, with why.
func PolicyInForce(cfg *config.File, st steering.State, now time.Time) (pol *policy.Compiled, ignored []string) {
	base, _ := cfg.Compiled.At(now)
	ovs, _, bad := overridesOf(st)
	for i, err := range bad {
		ignored = append(ignored, st.Overrides[i].Target+ruleSuffix(st.Overrides[i].Rule)+": "+err.Error())
	}
	pol, errs := base.WithOverrides(ovs)
	for _, oe := range errs {
		ignored = append(ignored, ovs[oe.Index].Target()+ruleSuffix(ovs[oe.Index].Rule)+": "+oe.Err.Error())
	}
	return pol, ignored
}

// runSteering keeps the runtime state current until ctx ends.
func (g *Gateway) runSteering(ctx context.Context) { g.steer.Run(ctx) }

// The run-time state's metrics: which version this instance applies,
// whether it is stale, and how many overrides and blocks are in force.
var (
	runtimeVersionDesc = prometheus.NewDesc("sluice_runtime_version",
		"Version of the run-time overrides, blocks and degrade switch this instance applies (the same at every instance once a change has reached them all).", nil, nil)
	runtimeStaleDesc = prometheus.NewDesc("sluice_runtime_stale",
		"1 while the run-time state cannot be read from its store (the last one read stays in force), else 0.", nil, nil)
	runtimeOverridesDesc = prometheus.NewDesc("sluice_runtime_overrides",
		"Run-time overrides and blocks in force, by kind: override or block.", []string{"kind"}, nil)
)

// steeringCollector exports the run-time state's metrics.
type steeringCollector struct{ g *Gateway }

func (steeringCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- runtimeVersionDesc
	ch <- runtimeStaleDesc
	ch <- runtimeOverridesDesc
}

func (c steeringCollector) Collect(ch chan<- prometheus.Metric) {
	st, status := c.g.steer.State()
	stale := 0.0
	if status.Stale {
		stale = 1
	}
	blocks := 0
	for _, e := range st.Overrides {
		if e.Block {
			blocks++
		}
	}
	ch <- prometheus.MustNewConstMetric(runtimeVersionDesc, prometheus.GaugeValue, float64(status.Version))
	ch <- prometheus.MustNewConstMetric(runtimeStaleDesc, prometheus.GaugeValue, stale)
	ch <- prometheus.MustNewConstMetric(runtimeOverridesDesc, prometheus.GaugeValue, float64(len(st.Overrides)-blocks), "override")
	ch <- prometheus.MustNewConstMetric(runtimeOverridesDesc, prometheus.GaugeValue, float64(blocks), "block")
}
