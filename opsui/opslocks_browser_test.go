package opsui_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/internal/apptest"
)

// TestOpsLocksViewInChromium drives the Locks and Audit views in headless
// Chromium at 1280×800: an operator logs in, sees the charts and the
// locks, searches by prefix, force-releases one lock through the
// confirmation step, and finds the action in the audit trail. With
// LEASEGATE_OPS_LOCKS_SCREENSHOT=path it saves a screenshot of the Locks
// view there (docs/ops-locks.png is made that way).
func TestOpsLocksViewInChromium(t *testing.T) {
	t.Parallel()
	bctx := startChromium(t)
	env := newLoginEnv(t, handlers.DefaultConfig())
	env.Backend.RealClock()
	e := env.E
	env.Metrics.Activity().Sample(time.Now())
	ops := []string{"Authorization", "Bearer " + loginOpsKey}
	for _, r := range []string{"checkin%3Auser-1", "checkin%3Auser-2", "payments%3Aorder-9", "reports%2Fnightly"} {
		apptest.Do(t, e, "POST", "/locks/"+r, `{"owner":"worker-`+r[len(r)-1:]+`","ttl_seconds":600}`, ops...).Want(t, 200)
	}
	apptest.Do(t, e, "POST", "/locks/checkin%3Auser-1", `{"owner":"someone-else","ttl_seconds":60}`, ops...).Want(t, 200)
	base, step := openTab(t, bctx, e)
	if err := chromedp.Do(step(),
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(base+"/ops/locks"),
		chromedp.WaitVisible(chromedp.CSS(`input#key`)),
		chromedp.SendKeys(chromedp.CSS(`input#key`), loginOpsKey),
		chromedp.Click(chromedp.CSS(`form.login button`)),
		chromedp.WaitVisible(chromedp.CSS(`.who`)),
	); err != nil {
		t.Fatalf("logging in: %v", err)
	}
	// The login lands on /ops/; the Locks view is one click away.
	if err := chromedp.Do(step(),
		chromedp.Navigate(base+"/ops/locks"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-resource="checkin:user-1"]`)),
	); err != nil {
		t.Fatalf("opening the Locks view: %v", err)
	}
	body, err := chromedp.Run(step(), chromedp.Text(chromedp.CSS("tbody")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"checkin:user-1", "checkin:user-2", "payments:order-9", "reports/nightly", "worker-1"} {
		if !strings.Contains(body, want) {
			t.Errorf("got table %q, want %s in it", body, want)
		}
	}
	charts, err := chromedp.Run(step(), chromedp.Evaluate[int](`document.querySelectorAll('figure.chart svg polyline').length`))
	if err != nil || charts != 4 {
		t.Errorf("got %d charts (%v), want 4", charts, err)
	}
	acquires, err := chromedp.Run(step(), chromedp.Text(chromedp.CSS(`figure[data-chart="acquires"] h2 b`)))
	if err != nil || acquires != "5" {
		t.Errorf("the acquires chart says %q (%v), want 5", acquires, err)
	}
	wide, err := chromedp.Run(step(), chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
	if err != nil || wide {
		t.Errorf("the Locks view scrolls sideways at 1280×800 (%v)", err)
	}
	fitsPhone(step(), t, "locks")
	if path := os.Getenv("LEASEGATE_OPS_LOCKS_SCREENSHOT"); path != "" {
		png, err := chromedp.Run(step(), chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(filepath.Clean(path), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Search.
	if err := chromedp.Do(step(),
		chromedp.SetValue(chromedp.CSS(`input#prefix`), "checkin:"),
		chromedp.Click(chromedp.CSS(`form.filter button`)),
		chromedp.WaitNotPresent(chromedp.CSS(`tr[data-resource="payments:order-9"]`)),
	); err != nil {
		t.Fatalf("searching: %v", err)
	}
	n, err := chromedp.Run(step(), chromedp.Evaluate[int](`document.querySelectorAll('tbody tr').length`))
	if err != nil || n != 2 {
		t.Errorf("got %d rows for prefix checkin: (%v), want 2", n, err)
	}

	// Force release, confirmed in a second step.
	sel := `tr[data-resource="checkin:user-1"] `
	if err := chromedp.Do(step(),
		chromedp.SendKeys(chromedp.CSS(sel+`input[name=reason]`), "worker-1 is wedged"),
		chromedp.Click(chromedp.CSS(sel+`button.force`)),
		chromedp.WaitVisible(chromedp.CSS(`section.confirm`)),
	); err != nil {
		t.Fatalf("asking to release: %v", err)
	}
	confirm, err := chromedp.Run(step(), chromedp.Text(chromedp.CSS(`section.confirm`)))
	if err != nil || !strings.Contains(confirm, "worker-1") || !strings.Contains(confirm, "wedged") {
		t.Errorf("got confirmation %q (%v), want the holder and the reason", confirm, err)
	}
	if got := apiCall(t, e, "GET", "/locks/checkin:user-1", loginOpsKey); got != 200 {
		t.Errorf("before confirming: got %d, want the lock still held", got)
	}
	if err := chromedp.Do(step(),
		chromedp.Click(chromedp.CSS(`section.confirm button.force`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)),
	); err != nil {
		t.Fatalf("confirming: %v", err)
	}
	flash, err := chromedp.Run(step(), chromedp.Text(chromedp.CSS(".flash")))
	if err != nil || !strings.Contains(flash, "Force-released") || !strings.Contains(flash, "checkin:user-1") {
		t.Errorf("got flash %q (%v), want the release confirmed", flash, err)
	}
	if got := apiCall(t, e, "GET", "/locks/checkin:user-1", loginOpsKey); got != 404 {
		t.Errorf("after confirming: got %d, want 404", got)
	}

	// The audit trail.
	if err := chromedp.Do(step(),
		chromedp.Click(chromedp.CSS(`nav.views a[href="/ops/audit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-action="force-release"]`)),
	); err != nil {
		t.Fatalf("opening the Audit view: %v", err)
	}
	rec, err := chromedp.Run(step(), chromedp.Text(chromedp.CSS(`tr[data-action="force-release"]`)))
	if err != nil || !strings.Contains(rec, "oncall") || !strings.Contains(rec, "lock:checkin:user-1") || !strings.Contains(rec, "wedged") {
		t.Errorf("got audit row %q (%v), want oncall's forced release", rec, err)
	}
	details, err := chromedp.Run(step(), chromedp.Text(chromedp.CSS(`tr[data-action="force-release"] td.details`)))
	if err != nil || !strings.HasPrefix(details, "owner=worker-1 token=") {
		t.Errorf("got details %q (%v), want the released holder and token as key=value", details, err)
	}
}
