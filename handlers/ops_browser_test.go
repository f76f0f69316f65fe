package handlers

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/leasegate/leasegate/abuse"
)

// chromium finds Debian's chromium: skipped when missing, a failure under
// CI=true (.ci/run installs it from .ci/packages).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found on PATH (CI=true: .ci/packages installs it)")
	}
	t.Skip("chromium not installed")
	return ""
}

// TestOpsPageInChromium drives the real page in headless Chromium: it
// loads the list, sees a flagged user, clicks Clear, and sees it gone.
// With LEASEGATE_OPS_SCREENSHOT=path it also saves a screenshot there
// (docs/ops-page.png is made that way).
func TestOpsPageInChromium(t *testing.T) {
	bin := chromium(t)
	pol := abuse.DefaultPolicies()
	pol.Default.MaxAttempts = 3
	env := newAbuseEnv(t, pol)
	for i, u := range []string{"scraper-17", "alice@example.com", "bot-4711", "u-clear-me"} {
		lock := "login"
		if i%2 == 1 {
			lock = "checkout"
		}
		for j := 0; j < 3+i; j++ {
			env.do(t, "POST", "/user-locks/"+lock+"/"+u, "").want(t, 200)
		}
		env.now = env.now.Add(90 * time.Second)
		env.mini.SetTime(env.now)
	}
	env.do(t, "POST", "/abuse/bans/bot-4711", `{"seconds": 3600, "reason": "credential stuffing"}`).want(t, 201)
	srv := httptest.NewServer(env.e)
	t.Cleanup(srv.Close)

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 560),
	}
	// The browser lives as long as allocCtx (no timeout on it, as chromedp
	// asks); each step gets its own deadline.
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	step := func() context.Context {
		ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		t.Cleanup(cancel)
		return ctx
	}

	row := chromedp.CSS(`tr[data-user="u-clear-me"]`)
	if err := chromedp.Do(step(),
		chromedp.Navigate(srv.URL+"/ops/"),
		chromedp.WaitVisible(row),
	); err != nil {
		t.Fatalf("loading the page: %v", err)
	}
	before, err := chromedp.Run(step(), chromedp.Text(chromedp.CSS("tbody")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"u-clear-me", "scraper-17", "alice@example.com", "bot-4711"} {
		if !strings.Contains(before, want) {
			t.Errorf("got table %q, want %s in it", before, want)
		}
	}
	if path := os.Getenv("LEASEGATE_OPS_SCREENSHOT"); path != "" {
		png, err := chromedp.Run(step(), chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(filepath.Clean(path), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if err := chromedp.Do(step(),
		chromedp.Click(chromedp.CSS(`tr[data-user="u-clear-me"] button.clear`)),
		chromedp.WaitVisible(chromedp.CSS(".flash")),
	); err != nil {
		t.Fatalf("clearing: %v", err)
	}
	flash, err := chromedp.Run(step(), chromedp.Text(chromedp.CSS(".flash")))
	if err != nil {
		t.Fatal(err)
	}
	left, err := chromedp.Run(step(), chromedp.Evaluate[int](`document.querySelectorAll('tr[data-user="u-clear-me"]').length`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(flash, "Cleared") || !strings.Contains(flash, "u-clear-me") {
		t.Errorf("got flash %q, want the clear confirmed", flash)
	}
	if left != 0 {
		t.Errorf("got %d rows for u-clear-me after clearing, want 0", left)
	}
	env.do(t, "GET", "/abuse/flagged/u-clear-me", "").want(t, 404)
	env.do(t, "GET", "/abuse/flagged/scraper-17", "").want(t, 200)
}
