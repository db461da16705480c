package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Server is how the gateway treats connections: how long it waits for
// callers and for the upstream, how many connections it holds, and how it
// shuts down. Every field has a default; the block is optional.
type Server struct {
	// ReadHeaderTimeout bounds reading a request's line and headers.
	// Default 10s.
	ReadHeaderTimeout time.Duration
	// BodyTimeout bounds reading a request's body, counted from the end of
	// its headers; a caller slower than that gets 408. Default 30s.
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request for that
	// long, and one whose caller has read nothing of its answer for that
	// long. Default 2m.
	IdleTimeout time.Duration
	// UpstreamTimeout bounds the wait for the upstream's response headers
	// once the request has been sent, for its connection, and for each
	// write of the request to it; over it the caller gets 504. Default 30s.
	UpstreamTimeout time.Duration
	// MaxConnections caps the callers' connections open at once; further
	// callers wait in the kernel's listen backlog until one closes.
	// Default 10000.
	MaxConnections int
	// BodyBuffer is the largest request body, in bytes, read whole before
	// its request takes a slot of protect's (max_in_flight): its caller's
	// upload then holds no slot of the service. A larger body streams to
	// the upstream as it arrives, without a slot, among at most
	// MaxStreamedBodies at once. Only with a protect block. Default 65536.
	BodyBuffer int
	// BodyBufferTotal bounds, in bytes, the bodies read whole at once in
	// the process (BodyBuffer each); a body that finds no room streams as a
	// larger one does. Default 67108864 (64 MiB).
	BodyBufferTotal int64
	// MaxStreamedBodies caps the requests whose body streams to the
	// upstream at once without a slot of protect's (larger than
	// BodyBuffer, or no room in BodyBufferTotal); more are answered 503
	// with Retry-After. Only with a protect block. Default 100.
	MaxStreamedBodies int
	// TLSHandshakeTimeout bounds a TLS handshake, from the connection's
	// accept (with a tls block, or admin.tls). Default 10s.
	TLSHandshakeTimeout time.Duration
	// MaxTLSHandshakes caps the TLS handshakes in progress at once on each
	// TLS listener; further connections wait in the kernel's listen
	// backlog until one ends. Default 256.
	MaxTLSHandshakes int
	// ShutdownDelay is how long the gateway keeps serving, with /readyz
	// answering 503, after it is told to stop and before it stops
	// accepting connections, so that load balancers see it leave. Default 0.
	ShutdownDelay time.Duration
	// DrainTimeout bounds how long requests in flight may finish once the
	// gateway stops accepting connections. Default 10s.
	DrainTimeout time.Duration
}

// Defaults of the server block.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultUpstreamTimeout   = 30 * time.Second
	DefaultMaxConnections    = 10_000
	DefaultDrainTimeout      = 10 * time.Second
	DefaultBodyBuffer        = 64 << 10
	DefaultBodyBufferTotal   = 64 << 20
	DefaultMaxStreamedBodies = 100
	maxBodyBuffer            = 16 << 20
	maxBodyBufferTotal       = 64 << 30
	maxServerDuration        = 24 * time.Hour
)

// DefaultServer returns the server settings of a file without a server block.
func DefaultServer() Server {
	return Server{ReadHeaderTimeout: DefaultReadHeaderTimeout, BodyTimeout: DefaultBodyTimeout,
		IdleTimeout: DefaultIdleTimeout, UpstreamTimeout: DefaultUpstreamTimeout,
		MaxConnections: DefaultMaxConnections, DrainTimeout: DefaultDrainTimeout, BodyBuffer: DefaultBodyBuffer,
		BodyBufferTotal: DefaultBodyBufferTotal, MaxStreamedBodies: DefaultMaxStreamedBodies,
		TLSHandshakeTimeout: DefaultTLSHandshakeTimeout, MaxTLSHandshakes: DefaultMaxTLSHandshakes}
}

// summary is check's line for the server block, "" for the defaults.
func (s Server) summary() string {
	if s == DefaultServer() {
		return ""
	}
	return fmt.Sprintf("server: timeouts header %v, body %v, idle %v, upstream %v; at most %d connections; shutdown delay %v, drain %v; "+
		"bodies read first up to %d bytes, %d at once, at most %d streamed\n",
		s.ReadHeaderTimeout, s.BodyTimeout, s.IdleTimeout, s.UpstreamTimeout, s.MaxConnections, s.ShutdownDelay, s.DrainTimeout,
		s.BodyBuffer, s.BodyBufferTotal, s.MaxStreamedBodies)
}

var serverFields = []string{"read_header_timeout", "body_timeout", "idle_timeout", "upstream_timeout",
	"max_connections", "body_buffer", "body_buffer_total", "max_streamed_bodies", "tls_handshake_timeout", "max_tls_handshakes", "shutdown_delay", "drain_timeout"}

// server decodes the server block.
func (d *decoder) server(n *yaml.Node, path string) Server {
	s := DefaultServer()
	m := d.fields(n, path, "a mapping ("+strings.Join(serverFields, ", ")+")", serverFields)
	s.ReadHeaderTimeout = d.timeout(m["read_header_timeout"], join(path, "read_header_timeout"), s.ReadHeaderTimeout, false)
	s.BodyTimeout = d.timeout(m["body_timeout"], join(path, "body_timeout"), s.BodyTimeout, false)
	s.IdleTimeout = d.timeout(m["idle_timeout"], join(path, "idle_timeout"), s.IdleTimeout, false)
	s.UpstreamTimeout = d.timeout(m["upstream_timeout"], join(path, "upstream_timeout"), s.UpstreamTimeout, false)
	s.MaxConnections = int(d.integer(m["max_connections"], join(path, "max_connections"), 1, 1_000_000,
		DefaultMaxConnections, "1 to 1000000; default 10000"))
	s.BodyBuffer = int(d.integer(m["body_buffer"], join(path, "body_buffer"), 1, maxBodyBuffer, DefaultBodyBuffer,
		"1 to 16777216 bytes; default 65536"))
	s.BodyBufferTotal = d.bodyBufferTotal(m["body_buffer_total"], join(path, "body_buffer_total"), s.BodyBuffer)
	s.MaxStreamedBodies = int(d.integer(m["max_streamed_bodies"], join(path, "max_streamed_bodies"), 1, 1_000_000,
		DefaultMaxStreamedBodies, "1 to 1000000; default 100"))
	s.TLSHandshakeTimeout = d.timeout(m["tls_handshake_timeout"], join(path, "tls_handshake_timeout"), s.TLSHandshakeTimeout, false)
	s.MaxTLSHandshakes = int(d.integer(m["max_tls_handshakes"], join(path, "max_tls_handshakes"), 1, 100_000,
		DefaultMaxTLSHandshakes, fmt.Sprintf("1 to 100000; default %d", DefaultMaxTLSHandshakes)))
	s.ShutdownDelay = d.timeout(m["shutdown_delay"], join(path, "shutdown_delay"), s.ShutdownDelay, true)
	s.DrainTimeout = d.timeout(m["drain_timeout"], join(path, "drain_timeout"), s.DrainTimeout, true)
	return s
}

// bodyBufferTotal decodes server.body_buffer_total: room for at least one
// body of each bytes (server.body_buffer).
func (d *decoder) bodyBufferTotal(n *yaml.Node, path string, each int) int64 {
	accepted := fmt.Sprintf("%d (body_buffer) to %d bytes; default %d", each, int64(maxBodyBufferTotal), DefaultBodyBufferTotal)
	def := max(DefaultBodyBufferTotal, int64(each))
	return d.integer(n, path, int64(each), maxBodyBufferTotal, def, accepted)
}

// timeout decodes a server duration: more than 0 (or 0 itself with
// zeroOK) and at most 24h.
func (d *decoder) timeout(n *yaml.Node, path string, def time.Duration, zeroOK bool) time.Duration {
	lowest := "more than 0"
	if zeroOK {
		lowest = "0 or more"
	}
	v, ok := d.durationIn(n, path,
		func(v time.Duration) bool { return (v > 0 || v == 0 && zeroOK) && v <= maxServerDuration },
		fmt.Sprintf("such as 500ms, 30s, 2m; default %v", def), fmt.Sprintf("%s, at most 24h; default %v", lowest, def))
	if !ok {
		return def
	}
	return v
}

// loopsToListen reports whether upstream would reach sluice's own listen
// address: the same port on the same host, where a listen address on every
// interface ("", 0.0.0.0, [::]) is also reached through a loopback name or
// address, this host's name or any of this host's own addresses.
func loopsToListen(listen string, upstream *url.URL) bool {
	lhost, lport, err := net.SplitHostPort(listen)
	if err != nil || lport == "0" {
		return false
	}
	uport := upstream.Port()
	if uport == "" {
		uport = map[string]string{"http": "80", "https": "443"}[upstream.Scheme]
	}
	if uport != lport {
		return false
	}
	lhost, uhost := hostName(lhost), hostName(upstream.Hostname())
	la, lerr := netip.ParseAddr(lhost)
	ua, uerr := netip.ParseAddr(uhost)
	switch {
	case lhost == uhost || lerr == nil && uerr == nil && la.Unmap() == ua.Unmap():
		return true
	case lhost == "" || lerr == nil && la.IsUnspecified():
		return isLocalhost(uhost) || uhost == ownName() || uerr == nil && (ua.IsLoopback() || ua.IsUnspecified() || ownAddr(ua))
	}
	return isLocalhost(lhost) && uerr == nil && isLoopbackName(ua) || isLocalhost(uhost) && lerr == nil && isLoopbackName(la)
}

func hostName(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// isLocalhost reports whether host is a name for the loopback interface.
func isLocalhost(host string) bool {
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// isLoopbackName reports whether a is what "localhost" resolves to.
func isLoopbackName(a netip.Addr) bool {
	return a.Unmap() == netip.AddrFrom4([4]byte{127, 0, 0, 1}) || a == netip.IPv6Loopback()
}

// ownName is this host's name, lower-case ("" if unknown).
func ownName() string {
	name, err := os.Hostname()
	if err != nil {
		return ""
	}
	return hostName(name)
}

// ownAddr reports whether a is one of this host's interface addresses.
func ownAddr(a netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, x := range addrs {
		if p, err := netip.ParsePrefix(x.String()); err == nil && p.Addr().Unmap() == a.Unmap() {
			return true
		}
	}
	return false
}
