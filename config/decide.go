package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-rl/sluice/policy"
)

// DefaultDenyStatus is decide.http_deny_status's default: the status /check
// answers a caller over its limit with, as the gateway would.
const DefaultDenyStatus = 429

// Decide is the decide block: sluice as a decision service that other
// gateways ask, Envoy over gRPC and nginx or Traefik over HTTP. Without an
// upstream it is all that `sluice serve` runs.
type Decide struct {
	// GRPC is the host:port of Envoy's RateLimitService v3
	// (ShouldRateLimit). "" serves none.
	GRPC string
	// HTTP is the host:port of GET /check, for nginx auth_request and
	// Traefik forwardAuth. "" serves none.
	HTTP string
	// HTTPDenyStatus is what /check answers a request over a limit with:
	// 429 (the default: Traefik, direct callers) or 403 (nginx, whose
	// auth_request passes on only 401 and 403; its documented recipe maps
	// 403 back to 429).
	HTTPDenyStatus int
	// EnvoyConfig are envoyproxy/ratelimit's rule files, files or
	// directories, read as written. A relative path is resolved against
	// the configuration file's directory; Parse checks that each one
	// exists. Default none.
	EnvoyConfig []string
}

// Equal reports whether d and o are the same settings.
func (d *Decide) Equal(o *Decide) bool {
	if d == nil || o == nil {
		return d == o
	}
	return d.GRPC == o.GRPC && d.HTTP == o.HTTP && d.HTTPDenyStatus == o.HTTPDenyStatus &&
		slices.Equal(d.EnvoyConfig, o.EnvoyConfig)
}

var decideFields = []string{"grpc", "http", "http_deny_status", "envoy_config"}

// decide decodes the decide block; nil when the file has none.
func (d *decoder) decide(n *yaml.Node, path string) *Decide {
	if isNull(n) {
		return nil
	}
	m := d.fields(n, path, "a mapping ("+strings.Join(decideFields, ", ")+")", decideFields)
	if d.failed[path] {
		return nil
	}
	dc := &Decide{}
	if g := m["grpc"]; !isNull(g) {
		dc.GRPC = d.hostPort(g, join(path, "grpc"), false)
	}
	if h := m["http"]; !isNull(h) {
		dc.HTTP = d.hostPort(h, join(path, "http"), false)
	}
	if isNull(m["grpc"]) && isNull(m["http"]) {
		d.fail(n, path, "neither grpc nor http is set: nothing would be served (such as grpc: 127.0.0.1:8081 for Envoy, http: 127.0.0.1:8082 for nginx and Traefik)")
	}
	dc.HTTPDenyStatus = d.denyStatus(m["http_deny_status"], join(path, "http_deny_status"))
	for i, p := range d.list(m["envoy_config"], join(path, "envoy_config"), "files or directories") {
		if s := d.envoyPath(p, index(join(path, "envoy_config"), i)); s != "" {
			dc.EnvoyConfig = append(dc.EnvoyConfig, s)
		}
	}
	if len(dc.EnvoyConfig) > 0 && isNull(m["grpc"]) {
		d.warnf(m["envoy_config"], join(path, "envoy_config"), "only Envoy's gRPC service reads these rules, and decide.grpc is not set (set grpc: 127.0.0.1:8081, or remove envoy_config)")
	}
	return dc
}

// denyStatus decodes decide.http_deny_status: 429 or 403.
func (d *decoder) denyStatus(n *yaml.Node, path string) int {
	const accepted = "accepted: 429 (Traefik, direct callers) or 403 (nginx auth_request, which passes on only 401 and 403); default 429"
	s, ok := d.scalar(n, path, "429 or 403")
	if !ok {
		return DefaultDenyStatus
	}
	switch s {
	case "429":
		return 429
	case "403":
		return 403
	}
	d.fail(n, path, "%q is not a deny status sluice answers with (%s)", clip(s), accepted)
	return DefaultDenyStatus
}

// envoyPath decodes one envoy_config path: a file or directory that
// exists, resolved against the configuration file's directory.
func (d *decoder) envoyPath(n *yaml.Node, path string) string {
	s, ok := d.scalar(n, path, "a file or directory")
	if !ok {
		return ""
	}
	p := s
	if p != "" && !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(d.file), p)
	}
	if s == "" || strings.ContainsRune(s, 0) {
		d.fail(n, path, "%q is not a path (a file or directory of envoyproxy/ratelimit rules, such as /etc/ratelimit/config)", clip(s))
		return ""
	}
	if _, err := os.Stat(p); err != nil {
		d.fail(n, path, "%s (a file or directory of envoyproxy/ratelimit rules; a relative path is read from the configuration file's directory)", statProblem(p, err))
		return ""
	}
	return p
}

// statProblem says why the path p cannot be used, without Go's "stat"
// prefix.
func statProblem(p string, err error) string {
	switch {
	case os.IsNotExist(err):
		return fmt.Sprintf("%s does not exist", clip(p))
	case os.IsPermission(err):
		return fmt.Sprintf("%s cannot be read (permission denied)", clip(p))
	}
	return fmt.Sprintf("%s cannot be read", clip(p))
}

// decideAlone checks the settings whose meaning changes with decide: with
// decide and no upstream, sluice decides for other gateways and proxies
// nothing, so listen is not used and protect and concurrency rules, which
// need sluice in the request's path, cannot apply.
func (d *decoder) decideAlone(m map[string]*yaml.Node, f *File) {
	if f.Decide == nil || !isNull(m["upstream"]) || !isNull(m["upstreams"]) {
		return
	}
	if !isNull(m["listen"]) {
		d.fail(m["listen"], "listen", "without upstream sluice proxies nothing: listen would not be used (add upstream to run the gateway too, or remove listen to run only the decision service)")
	}
	if !isNull(m["protect"]) {
		d.fail(d.keys["protect"], "protect", "without upstream sluice proxies nothing and cannot protect a service (add upstream, or remove protect)")
	}
	if !isNull(m["access_log"]) {
		d.fail(d.keys["access_log"], "access_log", "without upstream sluice serves no callers' requests: access_log would log nothing (add upstream, or remove access_log)")
	}
}

// checkDecideRules refuses, when /check or Envoy's gRPC service is
// served, the rules that need to see the request end or its response:
// /check, and Envoy's calls of the domain sluice (decided by this policy),
// answer before the request reaches the service and are never told how
// it ended, so they can hold no slot for a concurrency rule and settle
// nothing for count or cost_header.
func (d *decoder) checkDecideRules(f *File) {
	if f.Decide == nil || f.Decide.HTTP == "" && f.Decide.GRPC == "" {
		return
	}
	d.warnProxyAddress(f)
	server, field := "/check (decide.http)", "decide.http"
	if f.Decide.HTTP == "" {
		server, field = "Envoy's domain sluice (decide.grpc)", "decide.grpc"
	}
	why := server + " cannot apply %s: it answers before the request reaches the service and never learns %s (%s, or leave " +
		field + " out and let sluice proxy the requests)"
	for i, r := range f.Policy.Rules {
		at := func(field string) string { return fmt.Sprintf("rules[%d].%s", i, field) }
		switch {
		case r.Concurrency > 0:
			d.fail(d.nodeAt(at("concurrency"), false), at("concurrency"), why, "a concurrency rule", "when it ends", "use a rate")
		case r.Count != policy.CountAll:
			d.fail(d.nodeAt(at("count"), false), at("count"), why, "count: "+r.Count.String(), "its response", "count all requests")
		case r.CostHeader != "":
			d.fail(d.nodeAt(at("cost_header"), false), at("cost_header"), why, "cost_header", "its response", "charge a fixed cost")
		}
	}
}

// warnProxyAddress warns when /check would count every caller by the
// address of the proxy that asks: a rule counts by IP (key: ip, or
// anonymous callers, counted per IP), and no proxy is trusted to name the
// caller's.
func (d *decoder) warnProxyAddress(f *File) {
	if f.Decide.HTTP == "" || len(f.Policy.TrustedProxies) > 0 {
		return
	}
	for i, r := range f.Policy.Rules {
		if r.Key.Kind == policy.KeyIP || r.Key.Kind == policy.KeyClient && f.Policy.Clients.Unknown == policy.UnknownAnonymous {
			d.warnf(d.nodes["decide.http"], "decide.http", "rules[%d] (%s) counts callers by IP address, and trusted_proxies is empty: /check would count every caller "+
				"of the proxy that asks (nginx, Traefik) as that proxy's address, all in one count (list the proxy's address in trusted_proxies)", i, r.Name)
			return
		}
	}
}

// checkDecideAddrs refuses a decision service address that another of
// sluice's servers (listen, admin, the other decision service) also binds.
func (d *decoder) checkDecideAddrs(f *File) {
	if f.Decide == nil {
		return
	}
	taken := []struct{ name, addr string }{{"listen", f.Listen}, {"admin", f.Admin}}
	for _, s := range []struct{ name, addr string }{{"grpc", f.Decide.GRPC}, {"http", f.Decide.HTTP}} {
		if s.addr == "" {
			continue
		}
		for _, t := range taken {
			if t.addr != "" && sameAddr(s.addr, t.addr) {
				d.fail(d.nodes["decide."+s.name], "decide."+s.name, "%s is also %s's address (each server needs its own port)", s.addr, t.name)
			}
		}
		taken = append(taken, struct{ name, addr string }{"decide." + s.name, s.addr})
	}
}

// summary is check's line for the decide block, "" without one.
func (d *Decide) summary() string {
	if d == nil {
		return ""
	}
	var parts []string
	if d.GRPC != "" {
		parts = append(parts, "Envoy gRPC on "+d.GRPC)
	}
	if d.HTTP != "" {
		parts = append(parts, fmt.Sprintf("/check on %s (over a limit: %d)", d.HTTP, d.HTTPDenyStatus))
	}
	if len(d.EnvoyConfig) > 0 {
		parts = append(parts, "Envoy rule files "+strings.Join(d.EnvoyConfig, ", "))
	}
	return "decide: " + strings.Join(parts, "; ") + "\n"
}
