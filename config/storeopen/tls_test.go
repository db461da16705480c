package storeopen_test

import (
	"bufio"
	"context"
	cryptotls "crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/config/storeopen"
	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/internal/testcert"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/redis"
)

// freePort is a loopback port free a moment ago, for the TLS port.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestRedisTLS: a real redis-server that speaks TLS only with clients
// whose certificate its private authority signed: store.redis.tls's
// mapping (that authority, the client certificate and key, a server
// name) connects, and each part missing or wrong is refused by one side.
func TestRedisTLS(t *testing.T) {
	certs := testcert.WriteAuthority(t, t.TempDir())
	port := freePort(t)
	redistest.StartServer(t, "--tls-port", strconv.Itoa(port), "--tls-cert-file", certs.ServerCert, "--tls-key-file", certs.ServerKey,
		"--tls-ca-cert-file", certs.CA, "--tls-auth-clients", "yes")
	tlsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	storeFor := func(tls string) config.Store {
		t.Helper()
		text := "listen: 127.0.0.1:8080\nupstream: http://127.0.0.1:9000\nstore:\n  type: redis\n  redis:\n    addrs: [" + tlsAddr + "]\n    timeout: 5s\n    prefix: '" + redistest.KeyPrefix(t) + "'\n    tls: " + tls + "\nrules: [{name: a, rate: 1/s}]\n"
		f, err := config.Parse("t.yaml", []byte(text))
		if err != nil {
			t.Fatalf("tls: %s: %v", tls, err)
		}
		return f.Store
	}
	connect := func(tls string) error {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := redis.New(ctx, storeopen.RedisOptions(storeFor(tls)))
		if err != nil {
			return err
		}
		defer st.Close()
		_, err = st.Decide(ctx, store.RawKey("k"), onePerMinute, time.Now(), 1)
		return err
	}
	full := "{ca: " + certs.CA + ", cert: " + certs.ClientCert + ", key: " + certs.ClientKey
	if err := connect(full + "}"); err != nil {
		t.Fatalf("with the authority and a client certificate: %v", err)
	}
	if err := connect(full + ", server_name: " + testcert.ServerName + "}"); err != nil {
		t.Errorf("with server_name %s: %v", testcert.ServerName, err)
	}
	// The refusals are seen on a connection of the tls.Config's own (the
	// Redis client would keep retrying in the background): a PING must be
	// answered +PONG.
	ping := func(tls string) error {
		t.Helper()
		sc := storeFor(tls)
		conn, err := cryptotls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", tlsAddr, storeopen.RedisOptions(sc).TLS)
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		reply, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			return err
		}
		if reply != "+PONG\r\n" {
			return fmt.Errorf("PING answered %q", reply)
		}
		return nil
	}
	if err := ping(full + "}"); err != nil {
		t.Fatalf("PING with the authority and a client certificate: %v", err)
	}
	for tls, want := range map[string]string{
		full + ", server_name: other.test}": "other.test", // the certificate is not for that name
		"{ca: " + certs.CA + "}":            "",           // no client certificate: the server's alert, or a reset if it closes first
		"{ca: " + certs.OtherCA + ", cert: " + certs.ClientCert + ", key: " + certs.ClientKey + "}": "unknown authority", // another authority
		"true": "unknown authority", // the system's authorities do not know this one
	} {
		err := ping(tls)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("tls: %s: %v, want a refused connection (naming %q)", tls, err, want)
		}
	}
}

// TestTLSConfig: the tls.Config built from store.redis.tls: TLS 1.2 or
// later, the file's authorities, certificate and server name; with tls:
// true, the system's authorities and no certificate.
func TestTLSConfig(t *testing.T) {
	c := storeopen.TLSConfig(config.RedisTLS{})
	if c.MinVersion < 0x0303 || c.RootCAs != nil || len(c.Certificates) != 0 || c.ServerName != "" || c.InsecureSkipVerify {
		t.Errorf("tls: true: %+v", c)
	}
	pool := x509.NewCertPool()
	c = storeopen.TLSConfig(config.RedisTLS{RootCAs: pool, Certificate: &cryptotls.Certificate{}, ServerName: "redis.internal"})
	if c.RootCAs != pool || len(c.Certificates) != 1 || c.ServerName != "redis.internal" || c.InsecureSkipVerify {
		t.Errorf("tls mapping: %+v", c)
	}
}
