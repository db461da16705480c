package gateway

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/internal/fastproxy"
)

// TLS on the gateway's listeners (the tls block for the callers', admin.tls
// for the admin listener's): TLS 1.2 or later with crypto/tls's default
// cipher suites, ALPN offering http/1.1 only (the fast data path speaks
// HTTP/1.1; a client that offers h2 and http/1.1 gets http/1.1, one that
// offers only h2 is refused in the handshake with no_application_protocol),
// and the certificate re-read whenever its files change: new handshakes get
// the new pair, open connections keep theirs.

// certWatchDebounce is how long the certificate's directories must be quiet
// before the files are read again: a renewal writes the certificate and the
// key one after the other.
const certWatchDebounce = 200 * time.Millisecond

// tlsSet is the certificates of the gateway's TLS listeners, nil each
// without TLS; one source serves both when they name the same files.
type tlsSet struct {
	callers, admin *certSource
	// failed counts the handshakes that failed, by listener (listenerNames)
	// and reason (failureNames).
	failed [2][failReasons]atomic.Uint64
}

// The label values of sluice_tls_handshake_errors_total.
var (
	listenerNames = [2]string{"callers", "admin"}
	failureNames  = [failReasons]string{"plain_http", "timeout", "failed", "client_certificate"}
)

const (
	callersListener = iota
	adminListener
)

const (
	failPlainHTTP = iota
	failTimeout
	failOther
	failClientCert
	failReasons // how many there are
)

var (
	certExpiryDesc = prometheus.NewDesc("sluice_tls_certificate_expiry_timestamp_seconds",
		"When the certificate a TLS listener presents ends (its NotAfter, Unix seconds), by listener: callers (tls) or admin (admin.tls).",
		[]string{"listener"}, nil)
	handshakeErrorsDesc = prometheus.NewDesc("sluice_tls_handshake_errors_total",
		"TLS handshakes that failed, by listener and reason: plain_http (a plain HTTP request, answered 400), timeout (not within server.tls_handshake_timeout), client_certificate (tls.client_ca: no client certificate under client_auth: require, or one that does not verify: another authority's, expired), failed (any other: no common version or protocol, a client that refused the certificate, not TLS).",
		[]string{"listener", "reason"}, nil)
)

// tlsCollector exports the TLS listeners' series; none without TLS.
type tlsCollector struct{ g *Gateway }

func (c tlsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- certExpiryDesc
	ch <- handshakeErrorsDesc
}

func (c tlsCollector) Collect(ch chan<- prometheus.Metric) {
	s := &c.g.tls
	for i, src := range []*certSource{s.callers, s.admin} {
		if src == nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(certExpiryDesc, prometheus.GaugeValue, float64(src.pair.Load().Leaf.NotAfter.Unix()), listenerNames[i])
		for r, name := range failureNames {
			ch <- prometheus.MustNewConstMetric(handshakeErrorsDesc, prometheus.CounterValue, float64(s.failed[i][r].Load()), listenerNames[i], name)
		}
	}
}

// openTLS reads the certificates the configuration names.
func (g *Gateway) openTLS(cfg *config.File) error {
	var err error
	if cfg.TLS != nil {
		if g.tls.callers, err = newCertSource(*cfg.TLS, g.log); err != nil {
			return err
		}
	}
	switch {
	case cfg.AdminTLS == nil:
	case cfg.AdminTLS.Equal(cfg.TLS):
		g.tls.admin = g.tls.callers
	default:
		if g.tls.admin, err = newCertSource(*cfg.AdminTLS, g.log); err != nil {
			return err
		}
	}
	return nil
}

// sources are the distinct certificate sources in s.
func (s *tlsSet) sources() []*certSource {
	var out []*certSource
	if s.callers != nil {
		out = append(out, s.callers)
	}
	if s.admin != nil && s.admin != s.callers {
		out = append(out, s.admin)
	}
	return out
}

// reread reads every certificate's files again if they changed (a reload
// does this, for file systems whose changes the watch does not see).
func (s *tlsSet) reread() {
	for _, src := range s.sources() {
		src.reread()
	}
}

// watch re-reads each certificate when its files change, until ctx ends;
// the returned channel closes once it has stopped.
func (s *tlsSet) watch(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, src := range s.sources() {
		wg.Go(func() { src.watch(ctx) })
	}
	go func() { wg.Wait(); close(done) }()
	return done
}

// keepListenerTLS puts old's tls and admin.tls back into cfg when a reload
// changes them, and reports whether it did: which files a listener reads
// is fixed at start, as its address is (their contents are followed).
func keepListenerTLS(cfg, old *config.File) bool {
	if cfg.TLS.Equal(old.TLS) && cfg.AdminTLS.Equal(old.AdminTLS) {
		return false
	}
	cfg.TLS, cfg.AdminTLS = old.TLS, old.AdminTLS
	return true
}

// certSource is one certificate and key, as last read good from their
// files.
type certSource struct {
	files config.TLS
	log   *slog.Logger
	pair  atomic.Pointer[tls.Certificate]
	// clients is, with files.ClientCA, the tls.Config of a handshake that
	// asks for a client certificate verified against the authorities
	// read last (clientca.go); nil without.
	clients atomic.Pointer[tls.Config]
	mu      sync.Mutex // serialises rereads
	sum     [sha256.Size]byte
}

// newCertSource reads and checks the files (config.ReadKeyPair,
// config.ReadClientCAs).
func newCertSource(files config.TLS, log *slog.Logger) (*certSource, error) {
	s := &certSource{files: files, log: log}
	s.sum = s.filesSum()
	pair, err := config.ReadKeyPair(files.Cert, files.Key, time.Now())
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	s.pair.Store(pair)
	if files.ClientCA != "" {
		conf, err := s.clientConfig()
		if err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
		s.clients.Store(conf)
	}
	return s, nil
}

// certificate is the tls.Config's GetCertificate: the pair read last.
func (s *certSource) certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return s.pair.Load(), nil
}

// filesSum is a digest of the two files' contents (of what could be read).
func (s *certSource) filesSum() [sha256.Size]byte {
	h := sha256.New()
	for _, name := range []string{s.files.Cert, s.files.Key, s.files.ClientCA} {
		data, _ := os.ReadFile(name)
		fmt.Fprintf(h, "%d:", len(data))
		h.Write(data)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// reread reads the files again if their contents changed since they were
// last read. A good pair is presented from the next handshake on; a bad
// one (unreadable, a key of another certificate, expired) is logged once
// and the pair in use stays.
func (s *certSource) reread() {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := s.filesSum()
	if sum == s.sum {
		return
	}
	s.sum = sum
	s.rereadClientCA()
	pair, err := config.ReadKeyPair(s.files.Cert, s.files.Key, time.Now())
	if err != nil {
		old := s.pair.Load().Leaf
		s.log.Error("new certificate files refused; the certificate in use stays", "cert", s.files.Cert, "key", s.files.Key,
			"err", err.Error(), "in_use_expires", old.NotAfter.UTC().Format(time.RFC3339))
		return
	}
	s.pair.Store(pair)
	s.log.Info("certificate re-read", "cert", s.files.Cert, "subject", pair.Leaf.Subject.String(),
		"expires", pair.Leaf.NotAfter.UTC().Format(time.RFC3339))
}

// watch re-reads the files, after certWatchDebounce, on any change in
// their directories, until ctx ends, and once as it begins: the listeners
// serve before the watch is set up, and a change in between has no event. Watching the directories sees a file
// replaced by a rename (certbot's renewal moves links) and Kubernetes's
// swap of a secret's "..data" link, which leaves the files' own names
// untouched.
func (s *certSource) watch(ctx context.Context) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		s.log.Warn("not watching the certificate files; a reload (SIGHUP) re-reads them", "cert", s.files.Cert, "err", err.Error())
		return
	}
	defer w.Close()
	for _, dir := range dirsOf(s.files.Cert, s.files.Key, s.files.ClientCA) {
		if err := w.Add(dir); err != nil {
			s.log.Warn("not watching the certificate files; a reload (SIGHUP) re-reads them", "dir", dir, "err", err.Error())
			return
		}
	}
	s.reread() // a change since the files were read, before the watch began
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-w.Events:
			if !ok {
				return
			}
			fire = time.After(certWatchDebounce)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			s.log.Warn("certificate watch error", "err", err.Error())
		case <-fire:
			fire = nil
			s.reread()
		}
	}
}

// dirsOf lists the distinct directories of files.
func dirsOf(files ...string) []string {
	var dirs []string
	seen := map[string]bool{}
	for _, f := range files {
		if f == "" {
			continue
		}
		if d := filepath.Dir(f); !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// serverConfig is the tls.Config of a listener presenting src's pair
// (and asking for client certificates, with src's client_ca).
func serverConfig(src *certSource) *tls.Config {
	c := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: src.certificate,
		NextProtos:     []string{"http/1.1"},
	}
	if src.files.ClientCA != "" {
		c.GetConfigForClient = src.clientsConfig
	}
	return c
}

// listenTLS wraps ln in a tlsListener under the server block's handshake
// timeout and cap, if the listener (callersListener, adminListener) has a
// certificate.
func (g *Gateway) listenTLS(ln net.Listener, listener int) net.Listener {
	src := [2]*certSource{g.tls.callers, g.tls.admin}[listener]
	if src == nil {
		return ln
	}
	timeout := cmp.Or(g.server.TLSHandshakeTimeout, config.DefaultTLSHandshakeTimeout)
	limit := cmp.Or(g.server.MaxTLSHandshakes, config.DefaultMaxTLSHandshakes)
	return newTLSListener(ln, serverConfig(src), timeout, limit, &g.tls.failed[listener], g.log)
}

// tlsListener hands on the connections of its listener as *tls.Conn once
// their handshake is complete: the handshake runs in a goroutine of its
// own, within timeout of the accept, so a caller slow to handshake holds
// no server goroutine and no header deadline. At most max handshakes are
// in progress at once; the next Accept of the listener waits for one to
// end, so that further callers wait in the kernel's listen backlog, as
// capConnections' do. A plain HTTP request is answered 400, saying that
// this port speaks TLS, rather than dropped.
type tlsListener struct {
	ln      net.Listener
	conf    *tls.Config
	timeout time.Duration
	log     *slog.Logger
	slots   chan struct{}
	ready   chan *tls.Conn
	done    chan struct{} // closed by Close
	broken  chan struct{} // closed when the listener's Accept fails for good
	err     error         // why, set before broken closes
	once    sync.Once
	wg      sync.WaitGroup
	mu      sync.Mutex
	pending map[net.Conn]struct{}       // handshaking
	closed  bool                        // Close has ended the pending handshakes: no more are begun
	failed  *[failReasons]atomic.Uint64 // failed handshakes by reason (tlsSet.failed); nil: not counted
}

// newTLSListener starts accepting from ln; failed (nil: none) counts the
// handshakes that fail, by reason.
func newTLSListener(ln net.Listener, conf *tls.Config, timeout time.Duration, max int, failed *[failReasons]atomic.Uint64, log *slog.Logger) *tlsListener {
	l := &tlsListener{ln: ln, conf: conf, timeout: timeout, log: log, failed: failed, slots: make(chan struct{}, max),
		ready: make(chan *tls.Conn), done: make(chan struct{}), broken: make(chan struct{}), pending: map[net.Conn]struct{}{}}
	l.wg.Go(l.acceptLoop)
	return l
}

func (l *tlsListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.broken:
		return nil, l.err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *tlsListener) Addr() net.Addr { return l.ln.Addr() }

// Close stops accepting, ends the handshakes in progress and waits for
// their goroutines.
func (l *tlsListener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		err = l.ln.Close()
		l.mu.Lock()
		l.closed = true
		for c := range l.pending {
			_ = c.Close()
		}
		l.mu.Unlock()
	})
	l.wg.Wait()
	return err
}

// acceptLoop accepts connections while a handshake slot is free, each
// handshaken in its own goroutine.
func (l *tlsListener) acceptLoop() {
	var backoff time.Duration
	for {
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return
		}
		c, err := l.ln.Accept()
		if err != nil {
			<-l.slots
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) { // out of file descriptors and the like
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				l.log.Warn("accept failed; retrying", "err", err.Error(), "in", backoff.String())
				select {
				case <-time.After(backoff):
					continue
				case <-l.done:
					return
				}
			}
			l.err = err
			close(l.broken)
			return
		}
		backoff = 0
		if !l.begin(c) {
			<-l.slots
			_ = c.Close()
			return
		}
		l.wg.Go(func() { l.handshake(c) })
	}
}

// isTemporary reports whether err says to try again (too many open files).
func isTemporary(err error) bool {
	t, ok := err.(interface{ Temporary() bool })
	return ok && t.Temporary()
}

// begin notes c's handshake as pending, for Close to end, unless Close
// has run.
func (l *tlsListener) begin(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.pending[c] = struct{}{}
	return true
}

func (l *tlsListener) end(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.pending, c)
}

// handshake runs c's handshake within the timeout and hands the connection
// to Accept, or closes it.
func (l *tlsListener) handshake(c net.Conn) {
	defer func() { <-l.slots }()
	defer l.end(c)
	_ = c.SetDeadline(time.Now().Add(l.timeout))
	tc := fastproxy.TLSServer(c, l.conf) // its socket can be parked (fastproxy.StallWrites)
	if err := tc.Handshake(); err != nil {
		l.refused(c, err)
		_ = c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	select {
	case l.ready <- tc:
	case <-l.done:
		_ = tc.Close()
	}
}

// plainHTTP is the answer to an HTTP request sent in the clear to a TLS
// port, as net/http gives it.
const plainHTTP = "HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n" +
	"Client sent an HTTP request to an HTTPS server.\n"

// refused answers, before closing, a connection whose first bytes were an
// HTTP request rather than a TLS handshake; other failed handshakes (a
// scanner, a client that trusts not the certificate, one that offers only
// h2) are logged at debug level.
func (l *tlsListener) refused(c net.Conn, err error) {
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) && rh.Conn != nil && looksLikeHTTP(rh.RecordHeader[:]) {
		l.count(failPlainHTTP)
		_, _ = c.Write([]byte(plainHTTP)) // within the handshake's deadline
		return
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		l.count(failTimeout)
	case clientCertFailed(err):
		l.count(failClientCert)
	default:
		l.count(failOther)
	}
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("TLS handshake failed", "remote", c.RemoteAddr().String(), "err", err.Error())
	}
}

func (l *tlsListener) count(reason int) {
	if l.failed != nil {
		l.failed[reason].Add(1)
	}
}

// looksLikeHTTP reports whether a TLS record header's five bytes are the
// start of an HTTP/1 request line.
func looksLikeHTTP(hdr []byte) bool {
	for _, m := range []string{"GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "DELET", "PATCH", "CONNE", "TRACE"} {
		if bytes.Equal(hdr, []byte(m)) {
			return true
		}
	}
	return false
}
