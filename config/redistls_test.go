package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/internal/testcert"
)

// TestRedisTLS: store.redis.tls is true or false, or a mapping of a CA
// file, a client certificate and key, and a server name, read at load
// (relative to the configuration file's directory) with a clear error for
// each thing wrong.
func TestRedisTLS(t *testing.T) {
	dir := t.TempDir()
	certs := testcert.WriteAuthority(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "not.pem"), []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(tls string) (*File, error) {
		t.Helper()
		path := filepath.Join(dir, "sluice.yaml")
		text := head + "store:\n  type: redis\n  redis:\n    tls: " + tls + "\nrules: [{name: a, rate: 1/s}]\n"
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return Load(path)
	}

	f, err := load("true")
	if err != nil || !f.Store.Redis.TLS || !f.Store.Redis.TLSOptions.Equal(RedisTLS{}) {
		t.Fatalf("tls: true: %v, %+v", err, f.Store.Redis)
	}
	f, err = load("{ca: ca.pem, cert: client.pem, key: " + certs.ClientKey + ", server_name: redis.internal}") // relative and absolute
	if err != nil {
		t.Fatalf("tls mapping: %v", err)
	}
	o := f.Store.Redis.TLSOptions
	if !f.Store.Redis.TLS || o.RootCAs == nil || o.Certificate == nil || o.ServerName != "redis.internal" || o.CAFile != "ca.pem" {
		t.Errorf("tls mapping: %+v", f.Store.Redis)
	}
	if got, want := f.Store.summary(), "(ca ca.pem, client certificate client.pem, server name redis.internal)"; !strings.Contains(got, want) {
		t.Errorf("summary %q lacks %q", got, want)
	}
	again, _ := load("{ca: ca.pem, cert: client.pem, key: " + certs.ClientKey + ", server_name: redis.internal}")
	if again == nil || !again.Store.Equal(f.Store) {
		t.Error("the same tls mapping read twice is not Equal")
	}
	if other, _ := load("{ca: other-ca.pem, cert: client.pem, key: client-key.pem, server_name: redis.internal}"); other == nil || other.Store.Equal(f.Store) {
		t.Error("another CA is Equal")
	}
	if f, err := load("{}"); err != nil || !f.Store.Redis.TLS {
		t.Errorf("tls: {}: %v, want TLS with the system's authorities", err)
	}

	at := filepath.Join(dir, "sluice.yaml") + ":6:"
	for _, tc := range []struct{ tls, want string }{
		{"{ca: missing.pem}", at + `15: store.redis.tls.ca: missing.pem: cannot read it: no such file or directory (a PEM file of the certificate authorities that sign the Redis server's certificate; a relative path is read from the configuration file's directory)`},
		{"{ca: not.pem}", at + `15: store.redis.tls.ca: not.pem holds no PEM certificate (a file of the certificate authorities that sign the Redis server's certificate, -----BEGIN CERTIFICATE-----)`},
		{"{ca: .}", at + `15: store.redis.tls.ca: .: not a regular file (a PEM file of the certificate authorities that sign the Redis server's certificate; a relative path is read from the configuration file's directory)`},
		{"{cert: client.pem}", at + `17: store.redis.tls.cert: a client certificate without its key (give key: the PEM file of its private key too)`},
		{"{key: client-key.pem}", at + `16: store.redis.tls.key: a private key without its certificate (give cert: the PEM file of the client certificate too)`},
		{"{cert: client.pem, key: server-key.pem}", at + `17: store.redis.tls.cert: client.pem and server-key.pem are not a certificate and its private key: private key does not match public key (PEM files: the client certificate, then its key)`},
		{"{cert: client.pem, key: ca.pem}", at + `17: store.redis.tls.cert: client.pem and ca.pem are not a certificate and its private key: found a certificate rather than a key in the PEM for the private key (PEM files: the client certificate, then its key)`},
		{"{ca: ca.pem, insecure_skip_verify: true}", at + `23: store.redis.tls: unknown field "insecure_skip_verify" (accepted: ca, cert, key, server_name)`},
		{"{server_name: 'redis:6379'}", at + `24: store.redis.tls.server_name: "redis:6379" is not a host name (the name the Redis server's certificate carries, such as redis.internal; default: the host of each address)`},
		{"[ca.pem]", at + `10: store.redis.tls: want true, false or a mapping (ca, cert, key, server_name), not a list`},
		{"yes", at + `10: store.redis.tls: "yes" is not a boolean (true or false)`},
	} {
		_, err := load(tc.tls)
		if err == nil || err.Error() != tc.want {
			t.Errorf("tls: %s:\n got %v\nwant %s", tc.tls, err, tc.want)
		}
	}
}
