package config

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxPEMFileSize is the largest certificate or key file store.redis.tls
// reads, in bytes.
const MaxPEMFileSize = 1 << 20

// RedisTLS is store.redis.tls given as a mapping: whom to trust and who
// sluice is, for a Redis behind a private certificate authority or one that
// asks its clients for a certificate. The files are read and checked when
// the configuration is loaded; a reload reads them again. There is no way
// to skip verifying the server's certificate.
type RedisTLS struct {
	// RootCAs are the authorities that sign the server's certificate
	// (tls.ca, a PEM file). nil: the system's.
	RootCAs *x509.CertPool
	// Certificate is the client certificate and its private key (tls.cert
	// and tls.key, PEM files, both or neither). nil: none is offered.
	Certificate *tls.Certificate
	// ServerName is the name the server's certificate must carry
	// (tls.server_name). Default "": the host of the address dialled.
	ServerName string
	// CAFile, CertFile and KeyFile are where RootCAs and Certificate were
	// read from, as written in the file: what `sluice check` shows.
	CAFile, CertFile, KeyFile string
}

// Equal reports whether t and o trust the same authorities and offer the
// same certificate under the same server name.
func (t RedisTLS) Equal(o RedisTLS) bool {
	sameCert := t.Certificate == nil && o.Certificate == nil ||
		t.Certificate != nil && o.Certificate != nil && slices.EqualFunc(t.Certificate.Certificate, o.Certificate.Certificate, slices.Equal) &&
			sameKey(t.Certificate.PrivateKey, o.Certificate.PrivateKey)
	samePool := t.RootCAs == nil && o.RootCAs == nil || t.RootCAs != nil && t.RootCAs.Equal(o.RootCAs)
	return sameCert && samePool && t.ServerName == o.ServerName &&
		t.CAFile == o.CAFile && t.CertFile == o.CertFile && t.KeyFile == o.KeyFile
}

// sameKey reports whether two private keys are equal, as the standard
// library's key types compare themselves.
func sameKey(a, b crypto.PrivateKey) bool {
	k, ok := a.(interface{ Equal(crypto.PrivateKey) bool })
	return ok && k.Equal(b)
}

var redisTLSFields = []string{"ca", "cert", "key", "server_name"}

// redisTLS decodes store.redis.tls: true or false, or a mapping (ca,
// cert, key, server_name), which also turns TLS on.
func (d *decoder) redisTLS(n *yaml.Node, path string) (bool, RedisTLS) {
	var t RedisTLS
	if isNull(n) {
		return false, t
	}
	if n.Kind == yaml.ScalarNode {
		return d.boolean(n, path), t
	}
	m := d.fields(n, path, "true, false or a mapping (ca, cert, key, server_name)", redisTLSFields)
	if d.failed[path] {
		return false, t
	}
	if ca, file := d.pemFile(m["ca"], join(path, "ca"), "the certificate authorities that sign the Redis server's certificate"); ca != nil {
		pool := x509.NewCertPool()
		if pool.AppendCertsFromPEM(ca) {
			t.RootCAs, t.CAFile = pool, file
		} else {
			d.fail(m["ca"], join(path, "ca"), "%s holds no PEM certificate (a file of the certificate authorities that sign the Redis server's certificate, -----BEGIN CERTIFICATE-----)", clip(file))
		}
	}
	d.clientCertificate(m, path, &t)
	if sn := m["server_name"]; !isNull(sn) {
		t.ServerName = d.str(sn, join(path, "server_name"), "a host name", "")
		if t.ServerName == "" || strings.ContainsAny(t.ServerName, " \t/:") {
			d.fail(sn, join(path, "server_name"), "%q is not a host name (the name the Redis server's certificate carries, such as redis.internal; default: the host of each address)", clip(t.ServerName))
			t.ServerName = ""
		}
	}
	return true, t
}

// clientCertificate decodes tls.cert and tls.key: both or neither, a
// certificate and its private key.
func (d *decoder) clientCertificate(m map[string]*yaml.Node, path string, t *RedisTLS) {
	certNode, keyNode := m["cert"], m["key"]
	switch {
	case isNull(certNode) && isNull(keyNode):
		return
	case isNull(keyNode):
		d.fail(certNode, join(path, "cert"), "a client certificate without its key (give key: the PEM file of its private key too)")
		return
	case isNull(certNode):
		d.fail(keyNode, join(path, "key"), "a private key without its certificate (give cert: the PEM file of the client certificate too)")
		return
	}
	cert, certFile := d.pemFile(certNode, join(path, "cert"), "the client certificate")
	key, keyFile := d.pemFile(keyNode, join(path, "key"), "the client certificate's private key")
	if cert == nil || key == nil {
		return
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		d.fail(certNode, join(path, "cert"), "%s and %s are not a certificate and its private key: %v (PEM files: the client certificate, then its key)",
			clip(certFile), clip(keyFile), strings.TrimPrefix(err.Error(), "tls: "))
		return
	}
	t.Certificate, t.CertFile, t.KeyFile = &pair, certFile, keyFile
}

// pemFile reads the file named at n, resolved against the configuration
// file's directory: a regular file of at most MaxPEMFileSize bytes. It
// returns the contents and the name as written; nil if it could not be
// read (reported, saying it should hold what).
func (d *decoder) pemFile(n *yaml.Node, path, what string) ([]byte, string) {
	name, ok := d.scalar(n, path, "a file name")
	if !ok {
		return nil, ""
	}
	if name == "" || strings.ContainsRune(name, 0) {
		d.fail(n, path, "%q is not a file name (a PEM file of %s)", clip(name), what)
		return nil, ""
	}
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(d.file), p)
	}
	data, err := readPEM(p)
	if err != nil {
		d.fail(n, path, "%s: %v (a PEM file of %s; a relative path is read from the configuration file's directory)", clip(name), err, what)
		return nil, ""
	}
	return data, name
}

// readPEM reads a regular file of at most MaxPEMFileSize bytes.
func readPEM(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read it: %v", unwrapPath(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read it: %v", unwrapPath(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxPEMFileSize+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("cannot read it: %v", unwrapPath(err))
	case len(data) > MaxPEMFileSize:
		return nil, fmt.Errorf("larger than %d bytes", MaxPEMFileSize)
	}
	return data, nil
}
