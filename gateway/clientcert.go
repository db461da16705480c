package gateway

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"time"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/policy"
)

// Partner certificates (tls.client_ca): the callers' listener asks each
// caller for a client certificate and verifies it against the authorities
// of client_ca (read again whenever the file changes, as the listener's own
// certificate is); client_auth: require fails the handshake without one.
// The verified certificate's names are read once per connection
// (policy.NewPeerCert); which client they name is decided at each request
// under the policy in force, so that a reload that removes a client's
// certificate refuses the next request of a connection already open.

// clientConfig is the tls.Config of a handshake that asks for a client
// certificate, verified against the authorities in client_ca as read now.
func (s *certSource) clientConfig() (*tls.Config, error) {
	cas, err := config.ReadClientCAs(s.files.ClientCA, time.Now())
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, c := range cas {
		pool.AddCert(c)
	}
	auth := tls.VerifyClientCertIfGiven
	if s.files.ClientAuth == config.ClientRequire {
		auth = tls.RequireAndVerifyClientCert
	}
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: s.certificate,
		NextProtos:     []string{"http/1.1"},
		ClientAuth:     auth,
		ClientCAs:      pool,
	}, nil
}

// clientsConfig is the tls.Config's GetConfigForClient: the handshake asks
// for a client certificate under the authorities read last.
func (s *certSource) clientsConfig(*tls.ClientHelloInfo) (*tls.Config, error) {
	return s.clients.Load(), nil
}

// rereadClientCA reads client_ca again (reread, which has seen the files
// change). Good authorities verify from the next handshake on; a bad file
// (unreadable, no CA certificate, expired) is logged and the authorities in
// use stay.
func (s *certSource) rereadClientCA() {
	if s.files.ClientCA == "" {
		return
	}
	conf, err := s.clientConfig()
	if err != nil {
		s.log.Error("new client_ca file refused; the authorities in use stay", "client_ca", s.files.ClientCA, "err", err.Error())
		return
	}
	s.clients.Store(conf)
	s.log.Info("client_ca re-read", "client_ca", s.files.ClientCA)
}

// clientCertFailed reports whether a handshake failed on the caller's
// client certificate: none under client_auth: require, or one that does
// not verify against client_ca (another authority's, expired).
func clientCertFailed(err error) bool {
	var ve *tls.CertificateVerificationError
	return errors.As(err, &ve) || err.Error() == "tls: client didn't provide a certificate"
}

// verifiedPeer reads the client certificate tc's handshake verified, nil
// when the caller presented none (or the listener asks for none).
func verifiedPeer(tc *tls.Conn) *policy.PeerCert {
	st := tc.ConnectionState()
	if len(st.VerifiedChains) == 0 || len(st.PeerCertificates) == 0 {
		return nil
	}
	return policy.NewPeerCert(st.PeerCertificates[0])
}

// verifiedPeerOf is verifiedPeer as fastproxy.StallWrites reads a
// handshake, for the front (fastfront) to find: a nil *policy.PeerCert is
// no peer.
func verifiedPeerOf(tc *tls.Conn) any {
	if pc := verifiedPeer(tc); pc != nil {
		return pc
	}
	return nil
}
