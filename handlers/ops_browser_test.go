package handlers_test

import (
	"context"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/internal/testenv"
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

// startChromium starts one headless Chromium for the test and returns a
// context whose children run in it.
func startChromium(t *testing.T) context.Context {
	t.Helper()
	bin := chromium(t)
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
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return bctx
}

// seedFlags flags four users (one banned) a minute and a half apart, so
// the page has rows in a known order.
func seedFlags(t *testing.T, env *testenv.App, e *echo.Echo) {
	t.Helper()
	now := epoch
	for i, u := range []string{"scraper-17", "alice@example.com", "bot-4711", "u-clear-me"} {
		lock := "login"
		if i%2 == 1 {
			lock = "checkout"
		}
		for j := 0; j < 2+i; j++ {
			if got := apiCall(t, e, "POST", "/user-locks/"+lock+"/"+url.PathEscape(u), loginClientKey); got != 200 {
				t.Fatalf("attempt for %s: got %d, want 200", u, got)
			}
		}
		now = now.Add(90 * time.Second)
		env.Backend.SetTime(now)
	}
	testenv.Do(t, e, "POST", "/abuse/bans/bot-4711", `{"seconds": 3600, "reason": "credential stuffing"}`,
		"Authorization", "Bearer "+loginOpsKey).Want(t, 201)
}

// TestOpsPageInChromium drives the real page in headless Chromium, in
// open mode and with API keys: with keys, opening /ops/ lands on the
// login form, and pasting the ops key there opens the page. Then it sees
// the flagged users, clicks Clear on one, and sees it gone. With
// LEASEGATE_OPS_SCREENSHOT=path it also saves a screenshot of the page
// with keys there (docs/ops-page.png is made that way).
func TestOpsPageInChromium(t *testing.T) {
	bctx := startChromium(t)

	for _, withKeys := range []bool{false, true} {
		name := "in open mode the page needs no login"
		if withKeys {
			name = "with API keys an operator logs in by pasting an ops key"
		}
		t.Run(name, func(t *testing.T) {
			env := newLoginEnv(t, handlers.DefaultConfig())
			e := env.E
			if !withKeys {
				e = env.Instance(t, nil, nil)
			}
			seedFlags(t, env, e)
			srv := httptest.NewServer(e)
			t.Cleanup(srv.Close)

			// A browser context of its own: no cookies from the other run.
			ctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
			t.Cleanup(cancel)
			step := func() context.Context {
				ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				t.Cleanup(cancel)
				return ctx
			}
			row := chromedp.CSS(`tr[data-user="u-clear-me"]`)

			if err := chromedp.Do(step(), chromedp.Navigate(srv.URL+"/ops/")); err != nil {
				t.Fatalf("opening /ops/: %v", err)
			}
			if withKeys {
				loc, err := chromedp.Run(step(), chromedp.Location())
				if err != nil {
					t.Fatal(err)
				}
				if want := srv.URL + "/ops/login"; loc != want {
					t.Fatalf("got sent to %q, want %q", loc, want)
				}
				if err := chromedp.Do(step(),
					chromedp.WaitVisible(chromedp.CSS(`input#key`)),
					chromedp.SendKeys(chromedp.CSS(`input#key`), loginOpsKey),
					chromedp.Click(chromedp.CSS(`form.login button`)),
				); err != nil {
					t.Fatalf("logging in: %v", err)
				}
			}
			if err := chromedp.Do(step(), chromedp.WaitVisible(row)); err != nil {
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
			if withKeys {
				who, err := chromedp.Run(step(), chromedp.Text(chromedp.CSS(".who")))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(who, "oncall") || !strings.Contains(who, loginTenant) {
					t.Errorf("got header %q, want operator oncall of tenant %s", who, loginTenant)
				}
				cookies, err := chromedp.Run(step(), chromedp.Evaluate[string](`document.cookie`))
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(cookies, "leasegate_ops") {
					t.Errorf("got document.cookie %q, want the page's cookies hidden from script (HttpOnly)", cookies)
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
			if got := apiCall(t, e, "GET", "/abuse/flagged/u-clear-me", loginOpsKey); got != 404 {
				t.Errorf("u-clear-me after the clear: got %d, want 404", got)
			}
			if got := apiCall(t, e, "GET", "/abuse/flagged/scraper-17", loginOpsKey); got != 200 {
				t.Errorf("scraper-17 after the clear: got %d, want 200", got)
			}
			if !withKeys {
				return
			}
			if rec := env.AbuseLog.String(); !strings.Contains(rec, `"operator":"oncall"`) {
				t.Errorf("got abuse log %s, want the clear audited under oncall", rec)
			}

			if err := chromedp.Do(step(),
				chromedp.Click(chromedp.CSS(`form.logout button`)),
				chromedp.WaitVisible(chromedp.CSS(`input#key`)),
				chromedp.Navigate(srv.URL+"/ops/"),
				chromedp.WaitVisible(chromedp.CSS(`input#key`)),
			); err != nil {
				t.Fatalf("logging out: %v", err)
			}
		})
	}
}
