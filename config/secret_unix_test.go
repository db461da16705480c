//go:build unix

package config

import (
	"path/filepath"
	"syscall"
	"testing"
)

// TestSecretFileNotRegular: a file: reference to a pipe (which would block
// until a writer comes) or a device (which may never end) is refused at
// once, unread.
func TestSecretFileNotRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, "/dev/zero"} {
		text := head + "clients: {list: [{id: a, keys: [\"file:" + path + "\"]}]}\nrules: [{name: a, rate: 1/s}]\n"
		want := "t.yaml:3:33: clients.list[0].keys[0]: file:" + path + ": not a regular file (a secret file holds the value, optionally with a trailing newline)"
		if _, err := Parse("t.yaml", []byte(text)); err == nil || err.Error() != want {
			t.Errorf("file:%s:\n got %v\nwant %s", path, err, want)
		}
	}
}
