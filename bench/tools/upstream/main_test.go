package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/fixedcap"
)

func TestOKAnswersEveryPath(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(ok))
	defer srv.Close()
	for _, path := range []string{"/", "/claims/7", "/a/b?c=d"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusOK || string(body) != "ok" || res.ContentLength != 2 {
			t.Errorf("GET %s: %d %q (length %d), want 200 \"ok\" (length 2)", path, res.StatusCode, body, res.ContentLength)
		}
	}
}

func TestStatsAndReset(t *testing.T) {
	model, err := fixedcap.New(fixedcap.Config{Capacity: 2, ServiceTime: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(model)
	defer up.Close()
	stats := httptest.NewServer(statsHandler(model))
	defer stats.Close()
	for range 3 {
		res, err := http.Get(up.URL + "/claims/1")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	if st := getStats(t, stats.URL); st.Served != 3 || st.MaxInFlight != 1 || st.Slowdown != 1 {
		t.Errorf("stats %+v; want 3 served, one at a time, slowdown 1", st)
	}
	res, err := http.Post(stats.URL+"/reset", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if st := getStats(t, stats.URL); res.StatusCode != http.StatusNoContent || st.Served != 0 || st.MaxInFlight != 0 {
		t.Errorf("after POST /reset (%d): %+v; want 204 and the counts at 0", res.StatusCode, st)
	}
}

func getStats(t *testing.T, base string) fixedcap.Stats {
	t.Helper()
	res, err := http.Get(base + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st fixedcap.Stats
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatalf("GET /stats: %v", err)
	}
	return st
}
