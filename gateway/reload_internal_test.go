package gateway

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/internal/testcert"
)

// TestChangedFields: the fields a reload names as changed are those whose
// values differ, a store with TLS files read twice unchanged, another
// authority changed.
func TestChangedFields(t *testing.T) {
	dir := t.TempDir()
	certs := testcert.WriteAuthority(t, dir)
	load := func(ca, rate string) *config.File {
		t.Helper()
		path := filepath.Join(dir, "sluice.yaml")
		text := "listen: 127.0.0.1:8080\nupstream: http://127.0.0.1:9000\nstore: {type: redis, redis: {tls: {ca: " + ca +
			", cert: client.pem, key: client-key.pem}}}\nrules: [{name: a, rate: " + rate + "}]\n"
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	old := load(certs.CA, "1/s")
	for _, tc := range []struct {
		f    *config.File
		want []string
	}{
		{load(certs.CA, "1/s"), []string{}},
		{load(certs.CA, "2/s"), []string{"rules"}},
		{load(certs.OtherCA, "1/s"), []string{"store"}},
	} {
		if got := changedFields(old, tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("changed %v, want %v", got, tc.want)
		}
	}
}
