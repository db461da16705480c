package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/throttle"
)

// DefaultUpstreamName is the name of the one service of `upstream`: the
// value of the upstream label of the sluice_upstream_* series.
const DefaultUpstreamName = "default"

// MaxUpstreams bounds the upstreams list: each entry is a connection pool,
// a label value of the upstream series and, with protect, a throttle.
const MaxUpstreams = 64

// Upstream is one service of the upstreams list (or the one of upstream).
type Upstream struct {
	// Name names the service in metrics (the upstream label), logs and
	// the overview: the entry's name, else its URL's host:port. Unique.
	Name string
	// URL is where requests go: an http or https URL with a host, and
	// optionally a path the request's path is appended to.
	URL *url.URL
	// Host, when not empty, is the host the request must be for, as a
	// rule's match.host (policy.ParseHostPattern's form): a name or
	// address, or "*.example.com" for any name below example.com (not
	// example.com itself).
	Host string
	// Path, when not empty, is a path prefix the request's cleaned path
	// must have, on segment boundaries, as a rule's match.path.
	Path string
	// Timeout bounds the wait for this service's response headers; 0 is
	// server.upstream_timeout.
	Timeout time.Duration
	// Protect is this service's own protect block; nil: the file's protect
	// block, if any, with a throttle of this service's own.
	Protect *throttle.Config
}

var (
	upstreamFields      = []string{"name", "url", "match", "timeout", "protect"}
	upstreamMatchFields = []string{"host", "path"}
)

// upstreams decodes the upstreams list: each entry a service, the first
// whose match fits a request being its service.
func (d *decoder) upstreams(n *yaml.Node, path, listen string) []Upstream {
	items := d.list(n, path, "services (url, match, name, timeout, protect)")
	if n != nil && n.Kind == yaml.SequenceNode && len(items) == 0 {
		d.fail(n, path, "empty (list one service or more: - url: http://127.0.0.1:9000)")
	}
	if len(items) > MaxUpstreams {
		d.fail(n, path, "%d services: at most %d", len(items), MaxUpstreams)
		return nil
	}
	var ups []Upstream
	names := map[string]int{}
	catchAll := -1
	for i, item := range items {
		at := index(path, i)
		u, every, ok := d.upstreamEntry(item, at, listen)
		if !ok {
			continue
		}
		if first, dup := names[u.Name]; dup {
			d.fail(item, at, "name %q is also %s's (each service needs its own name: give this one name: ...)", u.Name, index(path, first))
		}
		names[u.Name] = i
		if catchAll >= 0 {
			d.fail(item, at, "never used: %s has no match and takes every request (put the entry without match last)", index(path, catchAll))
		} else if every {
			catchAll = i
		}
		ups = append(ups, u)
	}
	return ups
}

// upstreamEntry decodes one entry of upstreams; every reports that it has
// no match, so takes every request.
func (d *decoder) upstreamEntry(n *yaml.Node, path, listen string) (u Upstream, every, ok bool) {
	m := d.fields(n, path, "a service (url, match, name, timeout, protect)", upstreamFields)
	if d.failed[path] {
		return u, false, false
	}
	every = isNull(m["match"])
	if !d.required(m, n, path, "url", "url: http://127.0.0.1:9000") {
		return u, every, false
	}
	u.URL = d.upstream(m["url"], join(path, "url"))
	if u.URL == nil {
		return u, every, false
	}
	if listen != "" && loopsToListen(listen, u.URL) {
		d.fail(m["url"], join(path, "url"), "%s is sluice's own listen address %s: every request would come back to sluice (point it at a protected service)",
			u.URL.Redacted(), listen)
	}
	u.Name = u.URL.Host
	if !isNull(m["name"]) {
		u.Name = d.upstreamName(m["name"], join(path, "name"))
	}
	mm := d.fields(m["match"], join(path, "match"), "a mapping (host, path)", upstreamMatchFields)
	if mn := m["match"]; !isNull(mn) && mn.Kind == yaml.MappingNode && len(mn.Content) == 0 {
		d.fail(m["match"], join(path, "match"), "empty (give host, path or both; an entry without match takes every request)")
	}
	if hn := mm["host"]; !isNull(hn) {
		u.Host = d.hostPattern(hn, join(path, "match.host"))
	}
	if pn := mm["path"]; !isNull(pn) {
		u.Path = d.upstreamPath(pn, join(path, "match.path"))
	}
	if tn := m["timeout"]; !isNull(tn) {
		u.Timeout, _ = d.durationIn(tn, join(path, "timeout"), func(v time.Duration) bool { return v > 0 && v <= maxServerDuration },
			"such as 5s, 500ms; default server.upstream_timeout", "more than 0, at most 24h; default server.upstream_timeout")
	}
	if pn := m["protect"]; !isNull(pn) {
		if k := mappingKey(pn, "signals"); k != nil {
			d.fail(k, join(path, "protect.signals"), "signals degrade the whole gateway, not one service (give them in the top-level protect block)")
		} else {
			u.Protect, _ = d.protect(pn, join(path, "protect"))
		}
	}
	return u, every, true
}

// mappingKey is the key node name of mapping n, nil if n is no mapping or
// has no such key.
func mappingKey(n *yaml.Node, name string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == name {
			return n.Content[i]
		}
	}
	return nil
}

// upstreamName decodes an upstream's name: a label value, so short and
// plain.
func (d *decoder) upstreamName(n *yaml.Node, path string) string {
	const want = "1 to 64 letters, digits, '-', '_', '.' or ':', such as claims"
	s, ok := d.scalar(n, path, "a name")
	if !ok {
		return ""
	}
	if s == "" || len(s) > 64 || strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:") != "" {
		d.fail(n, path, "%q is not a service name (%s)", clip(s), want)
		return ""
	}
	return s
}

// hostPattern decodes a match host as a rule's match.host is read
// (policy.ParseHostPattern): returned in the form it matches.
func (d *decoder) hostPattern(n *yaml.Node, path string) string {
	s, ok := d.scalar(n, path, "a host")
	if !ok {
		return ""
	}
	h, err := policy.ParseHostPattern(s)
	if err != nil {
		d.fail(n, path, "%s", strings.TrimPrefix(err.Error(), "policy: "))
		return ""
	}
	return h
}

// upstreamPath decodes a match path: as a rule's, a clean prefix.
func (d *decoder) upstreamPath(n *yaml.Node, path string) string {
	s, ok := d.scalar(n, path, "a path prefix")
	if !ok {
		return ""
	}
	if !strings.HasPrefix(s, "/") {
		d.fail(n, path, "%q must start with '/' (a path prefix such as /reports)", clip(s))
		return ""
	}
	if clean, ok := cleanPathPrefix(s); !ok {
		d.fail(n, path, "%q never matches: request paths are cleaned first (write %s)", clip(s), clean)
		return ""
	}
	return strings.TrimSuffix(s, "/")
}

// cleanPathPrefix reports whether p, a path prefix in decoded form, is
// what policy.CleanPath makes of a request path, so that it can match at
// all; if not, it says what to write instead.
func cleanPathPrefix(p string) (string, bool) {
	_, clean, err := policy.CleanPath(strings.ReplaceAll(p, "%", "%25"))
	if err != nil {
		return "a path without " + strings.TrimPrefix(err.Error(), "policy: request path has "), false
	}
	if t := strings.TrimSuffix(p, "/"); clean != t && clean != p {
		return clean, false
	}
	return "", true
}

// UpstreamNamed returns the service named name, nil if there is none.
func (f *File) UpstreamNamed(name string) *Upstream {
	for i := range f.Upstreams {
		if f.Upstreams[i].Name == name {
			return &f.Upstreams[i]
		}
	}
	return nil
}

// upstreamsSummary lists the services of an upstreams list, one line each
// in order: the match, where it goes, and its own timeout and protect.
func upstreamsSummary(f *File) string {
	if len(f.Upstreams) == 1 && f.Upstreams[0].Name == DefaultUpstreamName {
		return ""
	}
	var b strings.Builder
	for i, u := range f.Upstreams {
		match := "every request"
		switch {
		case u.Host != "" && u.Path != "":
			match = "host " + u.Host + ", path " + u.Path
		case u.Host != "":
			match = "host " + u.Host
		case u.Path != "":
			match = "path " + u.Path
		}
		fmt.Fprintf(&b, "upstreams[%d] %s: %s -> %s", i, u.Name, match, u.URL.Redacted())
		if u.Timeout > 0 {
			fmt.Fprintf(&b, ", timeout %v", u.Timeout)
		}
		if u.Protect != nil {
			b.WriteString(", its own " + strings.TrimSuffix(protectSummary(u.Protect), "\n"))
		}
		b.WriteString("\n")
	}
	return b.String()
}
