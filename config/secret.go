package config

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxSecretFileSize is the largest file a file: reference may name, in
// bytes.
const MaxSecretFileSize = 64 << 10

// secret decodes a secret (an access key, the Redis user name or password,
// the admin token), which may be written in place or referenced:
//
//	env:NAME       the value of environment variable NAME (set and not empty)
//	file:PATH      the contents of file PATH, one trailing newline removed;
//	               a relative PATH is relative to the configuration file
//	literal:TEXT   TEXT as written (for a secret that starts with env:,
//	               file: or literal:)
//
// A reference that cannot be resolved is reported at n.
func (d *decoder) secret(n *yaml.Node, path, want string) (string, bool) {
	s, ok := d.scalar(n, path, want)
	if !ok {
		return "", false
	}
	v, err := d.resolveSecret(s)
	if err != nil {
		d.fail(n, path, "%v", err)
		return "", false
	}
	return v, true
}

func (d *decoder) resolveSecret(s string) (string, error) {
	if text, ok := strings.CutPrefix(s, "literal:"); ok {
		return text, nil
	}
	if name, ok := strings.CutPrefix(s, "env:"); ok {
		v, set := os.LookupEnv(name)
		switch {
		case name == "" || strings.ContainsAny(name, "= \t"):
			return "", fmt.Errorf("%q: %q is not an environment variable name (env:NAME; write literal:%s for a value that starts with env:)", clip(s), clip(name), clip(s))
		case !set:
			return "", fmt.Errorf("environment variable %s is not set (%s names it; write literal:%s for a value that starts with env:)", clip(name), clip(s), clip(s))
		case v == "":
			return "", fmt.Errorf("environment variable %s is empty (%s names it)", clip(name), clip(s))
		}
		return v, nil
	}
	if name, ok := strings.CutPrefix(s, "file:"); ok {
		return d.secretFile(name)
	}
	return s, nil
}

// secretFile reads a file: reference. Only regular files are read (a pipe
// or a device could block or never end), at most MaxSecretFileSize bytes.
func (d *decoder) secretFile(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("file: names no file (file:PATH, such as file:/run/secrets/redis-password)")
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(d.file), path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("file:%s: cannot read the secret: %v", clip(name), unwrapPath(err))
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("file:%s: not a regular file (a secret file holds the value, optionally with a trailing newline)", clip(name))
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("file:%s: cannot read the secret: %v", clip(name), unwrapPath(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSecretFileSize+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("file:%s: cannot read the secret: %v", clip(name), unwrapPath(err))
	case len(data) > MaxSecretFileSize:
		return "", fmt.Errorf("file:%s: larger than %d bytes (a secret file holds one value)", clip(name), MaxSecretFileSize)
	}
	v, ok := strings.CutSuffix(string(data), "\r\n")
	if !ok {
		v = strings.TrimSuffix(v, "\n")
	}
	if v == "" {
		return "", fmt.Errorf("file:%s: the file is empty", clip(name))
	}
	return v, nil
}

// unwrapPath drops the *fs.PathError's repetition of the path.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
