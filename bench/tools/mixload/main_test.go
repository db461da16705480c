package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/fixedcap"
)

// 100 requests in 200ms: 20 critical, 40 normal, 40 low; the upstream
// refuses the low ones, serves the others and counts them.
func TestRunCountsEveryClass(t *testing.T) {
	model, err := fixedcap.New(fixedcap.Config{Capacity: 200, ServiceTime: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", model)
	mux.HandleFunc("/exports/", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	up := httptest.NewServer(mux)
	defer up.Close()
	stats := http.NewServeMux()
	stats.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(model.Stats()) })
	stats.HandleFunc("POST /reset", func(w http.ResponseWriter, _ *http.Request) { model.Reset(); w.WriteHeader(http.StatusNoContent) })
	st := httptest.NewServer(stats)
	defer st.Close()

	cfg, err := parseFlags([]string{"-url", up.URL, "-rate", "500", "-duration", "200ms", "-stats", st.URL})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(t.Context(), cfg, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"mixload: class=critical sent=20 ok=20 refused=0 failed=0 skipped=0 ",
		"mixload: class=normal sent=40 ok=40 refused=0 failed=0 skipped=0 ",
		"mixload: class=low sent=40 ok=0 refused=40 failed=0 skipped=0 p50_ms=0.00 p99_ms=0.00\n",
		"mixload: upstream max_in_flight=",
		" served=60\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestNextInterleavesByShare(t *testing.T) {
	g := newGenerator(config{critical: 0.2, low: 0.4, timeout: time.Second, maxOutstanding: 1})
	defer g.close()
	var got strings.Builder
	for range 10 {
		got.WriteByte(g.next().name[0])
	}
	if got.String() != "nlcnlnlcnl" {
		t.Errorf("classes of 10 requests: %s; want nlcnlnlcnl (2 critical, 4 normal, 4 low, interleaved)", got.String())
	}
}

func TestParseFlagsRefuses(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-url", "http://x", "-rate", "0"},
		{"-url", "http://x", "-critical", "0.7", "-low", "0.4"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q): no error", args)
		}
	}
}
