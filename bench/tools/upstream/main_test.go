package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
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
