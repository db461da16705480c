package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// browser starts headless chromium under chromedp for one test; accept
// says how it answers the page's confirm dialogs (true: OK).
func browser(t *testing.T, accept *atomic.Bool) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumBinary(t)), chromedp.NoSandbox,
		chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1100, 1400))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	tctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancel(); cancelAlloc() })
	chromedp.ListenTarget(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(accept.Load())) }()
		}
	})
	return tctx
}

// runSteps runs the actions one by one, naming the one that failed.
func runSteps(ctx context.Context, t *testing.T, actions ...chromedp.Action) error {
	t.Helper()
	for i, a := range actions {
		if err := chromedp.Run(ctx, a); err != nil {
			return fmt.Errorf("step %d (%T): %w", i, a, err)
		}
	}
	return nil
}

// runtimeOf reads GET /api/v1/overrides with the admin token.
func runtimeOf(t *testing.T, admin, token string) (out struct {
	Version   uint64
	Overrides []struct{ Target, Rule, Rate, Author, Reason string }
	Degrade   struct{ On bool }
}) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+admin+"/api/v1/overrides", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDashboardControls drives the dashboard's incident controls in a real
// browser: after the token, an override set from the form (confirmed)
// limits the caller and names the token in the audit trail; a dismissed
// confirmation changes nothing; the degrade switch turns on and off; the
// override is removed from its row.
func TestDashboardControls(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer up.Close()
	const token = "dash-admin-token-0123"
	cfg := strings.NewReplacer("ADMIN", "{ listen: 127.0.0.1:0, tokens: { alice: "+token+" } }", "UPSTREAM", up.URL).Replace(dashboardConfig)
	p := startServe(t, writeFile(t, "sluice.yaml", cfg))
	var accept atomic.Bool
	accept.Store(true)
	ctx := browser(t, &accept)
	err := runSteps(ctx, t,
		chromedp.Navigate("http://"+p.admin+"/"),
		chromedp.WaitVisible("#login"),
		chromedp.SendKeys("#token", token),
		chromedp.Click(`#login button[type=submit]`),
		chromedp.WaitVisible("#override-form"),
		chromedp.WaitReady(`#override-form select[name=rule] option[value=claims]`),
		chromedp.SendKeys(`#override-form input[name=target]`, "partner-a"),
		chromedp.SendKeys(`#override-form input[name=rate]`, "1/m"),
		chromedp.SendKeys(`#override-form input[name=ttl]`, "1h"),
		chromedp.SendKeys(`#override-form input[name=reason]`, "floods claims"),
		chromedp.Click("#override-button"),
		chromedp.WaitVisible(`#overrides tr[data-target="partner-a"]`),
	)
	if err != nil {
		t.Fatalf("set an override from the dashboard: %v", err)
	}
	rt := runtimeOf(t, p.admin, token)
	if len(rt.Overrides) != 1 || rt.Overrides[0].Rate != "1/m" || !strings.HasPrefix(rt.Overrides[0].Author, "alice from ") || rt.Overrides[0].Reason != "floods claims" {
		t.Fatalf("after the form: %+v", rt)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	if got := []int{fetch(t, c, "GET", "http://"+p.listen+"/claims/1", "dash-key-a").status, fetch(t, c, "GET", "http://"+p.listen+"/claims/1", "dash-key-a").status}; got[0] != 200 || got[1] != 429 {
		t.Errorf("partner-a under the dashboard's 1/m: %v, want 200 then 429", got)
	}
	// A dismissed confirmation sends nothing.
	accept.Store(false)
	var state string
	err = chromedp.Run(ctx,
		chromedp.SendKeys(`#degrade-form input[name=reason]`, "checkout slow"),
		chromedp.Click("#degrade-button"),
		chromedp.Sleep(500*time.Millisecond), // nothing to wait for: nothing may happen
		chromedp.AttributeValue("#degrade-state", "data-on", &state, nil),
	)
	if err != nil || state != "false" || runtimeOf(t, p.admin, token).Degrade.On {
		t.Fatalf("a dismissed confirmation degraded: %v %q", err, state)
	}
	accept.Store(true)
	err = chromedp.Run(ctx,
		chromedp.Click("#degrade-button"),
		chromedp.WaitVisible(`#degrade-state[data-on="true"]`),
		chromedp.WaitVisible(`#audit tr[data-action="degrade_on"]`),
		chromedp.Click(`#overrides tr[data-target="partner-a"] button.remove`),
		chromedp.WaitNotPresent(`#overrides tr[data-target="partner-a"]`),
		chromedp.WaitVisible(`#audit tr[data-action="remove"]`),
	)
	if err != nil {
		t.Fatalf("degrade and remove from the dashboard: %v", err)
	}
	if rt := runtimeOf(t, p.admin, token); len(rt.Overrides) != 0 || !rt.Degrade.On {
		t.Errorf("after degrade and remove: %+v", rt)
	}
}
