package opsui_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/tooltest"
)

// chromium finds Debian's chromium: skipped when missing, a failure under
// CI=true (.ci/run installs it from .ci/packages).
func chromium(t *testing.T) string {
	t.Helper()
	return tooltest.Look(t, "Debian's chromium package", "chromium", "chromium-browser")
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
		// The window the page must fit (docs/abuse.md): 1280×800.
		chromedp.WindowSize(1280, 800),
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

// openTab serves h on a test server and opens a tab on it in a browser
// context of its own (no cookies from another tab). step is the context
// of one step of the tab, bounded against hangs only: on a loaded
// two-core machine one step (a click, a navigation and two waits) has
// taken over 30 s.
func openTab(t *testing.T, bctx context.Context, h http.Handler) (baseURL string, step func() context.Context) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	return srv.URL, func() context.Context {
		ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
}

// Very long names without a break opportunity, which must wrap rather
// than widen the page: a user id of the longest allowed (128 bytes), on a
// lock name of the longest allowed (64), and a ban reason of 256 bytes.
var (
	longUser   = "session-" + strings.Repeat("0123456789abcdef", 7) + "ffffffff"
	longLock   = "checkout." + strings.Repeat("x", 55)
	longReason = "stuffing:" + strings.Repeat("credential-list-", 15) + "end"
)

// seedFlags flags six users (two banned) a minute and a half apart, so
// the page has rows in a known order.
func seedFlags(t *testing.T, env *apptest.App, e *echo.Echo) {
	t.Helper()
	now := epoch
	for i, u := range []string{"scraper-17", "alice@example.com", longUser, "bot-4711", "u-clear-me"} {
		lock := "login"
		if i%2 == 1 {
			lock = "checkout"
		}
		if u == longUser {
			lock = longLock
		}
		for j := 0; j < 2+i; j++ {
			if got := apiCall(t, e, "POST", "/user-locks/"+lock+"/"+url.PathEscape(u), loginClientKey); got != 200 {
				t.Fatalf("attempt for %s: got %d, want 200", u, got)
			}
		}
		now = now.Add(90 * time.Second)
		env.Backend.SetTime(now)
	}
	apptest.Do(t, e, "POST", "/abuse/bans/bot-4711", `{"seconds": 3600, "reason": "credential stuffing"}`,
		"Authorization", "Bearer "+loginOpsKey).Want(t, 201)
	apptest.Do(t, e, "POST", "/abuse/bans/"+longUser, `{"seconds": 86400, "reason": "`+longReason+`"}`,
		"Authorization", "Bearer "+loginOpsKey).Want(t, 201)
}

// fitsWindow fails the test when the page is wider than the window (a
// horizontal scroll bar), and logs both widths.
func fitsWindow(ctx context.Context, t *testing.T, what string) {
	t.Helper()
	w, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, window.innerWidth, window.innerHeight]`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: scrollWidth %d, window %d×%d", what, w[0], w[1], w[2])
	if w[1] != 1280 {
		t.Errorf("%s: got a window %d px wide, want 1280", what, w[1])
	}
	if w[0] > w[1] {
		t.Errorf("%s: got scrollWidth %d > innerWidth %d, want the page to fit the window", what, w[0], w[1])
	}
}

// fitsPhone checks the page at 420 px wide, a phone: it must not scroll
// sideways (the tables stack their rows as cards). With
// LEASEGATE_OPS_PHONE_SCREENSHOTS=dir it saves the view there as
// <name>.png. The window is 1280×800 again afterwards.
func fitsPhone(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(420, 900)); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
			t.Fatal(err)
		}
	}()
	w, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, window.innerWidth]`))
	if err != nil {
		t.Fatal(err)
	}
	if w[1] != 420 || w[0] > w[1] {
		t.Errorf("%s at 420 px: got scrollWidth %d, innerWidth %d; want a window 420 px wide that the page fits", name, w[0], w[1])
	}
	if dir := os.Getenv("LEASEGATE_OPS_PHONE_SCREENSHOTS"); dir != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpsPageInChromium drives the real page in headless Chromium, in
// open mode and with API keys: with keys, opening /ops/ lands on the
// login form, and pasting the ops key there opens the page. Then it sees
// the flagged users, clicks Clear on one, and sees it gone. With
// LEASEGATE_OPS_SCREENSHOT=path it also saves a screenshot of the page
// with keys there (docs/ops-page.png is made that way).
func TestOpsPageInChromium(t *testing.T) {
	t.Parallel()
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
			// A tab of its own: no cookies from the other run.
			base, step := openTab(t, bctx, e)
			row := chromedp.CSS(`tr[data-user="u-clear-me"]`)

			if err := chromedp.Do(step(), chromedp.Navigate(base+"/ops/")); err != nil {
				t.Fatalf("opening /ops/: %v", err)
			}
			if withKeys {
				loc, err := chromedp.Run(step(), chromedp.Location())
				if err != nil {
					t.Fatal(err)
				}
				if want := base + "/ops/login"; loc != want {
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
			for _, want := range []string{"u-clear-me", "scraper-17", "alice@example.com", "bot-4711", longUser, longLock, longReason} {
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
				fitsWindow(step(), t, "the list")
				if path := os.Getenv("LEASEGATE_OPS_SCREENSHOT"); path != "" {
					// The 1280×800 window as an operator sees it.
					png, err := chromedp.Run(step(), chromedp.CaptureScreenshot())
					if err != nil {
						t.Fatalf("screenshot: %v", err)
					}
					if err := os.WriteFile(filepath.Clean(path), png, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				// A short lock name is one line at 1280 px ("login", not
				// "logi" over "n"); the longest may wrap.
				split, err := chromedp.Run(step(), chromedp.Evaluate[[]string](`[...document.querySelectorAll('td.lock code')]
					.filter(e => e.textContent.length <= 16 && e.getClientRects().length !== 1).map(e => e.textContent)`))
				if err != nil || len(split) > 0 {
					t.Errorf("lock names wrapped at 1280 px: %q (%v)", split, err)
				}
				// Nor when the table is squeezed, as a wider font or a longer
				// row squeezes it: the column has a floor.
				split, err = chromedp.Run(step(), chromedp.Evaluate[[]string](`(() => {
					const main = document.querySelector('main');
					main.style.width = '900px';
					const split = [...document.querySelectorAll('td.lock code')]
						.filter(e => e.textContent.length <= 16 && e.getClientRects().length !== 1).map(e => e.textContent);
					main.style.width = '';
					return split;
				})()`))
				if err != nil || len(split) > 0 {
					t.Errorf("lock names wrapped in a table squeezed to 900 px: %q (%v)", split, err)
				}
				fitsPhone(step(), t, "abuse-review")
			}

			if withKeys {
				// Find the long user by exact id: the record shows the ban
				// in full and still fits the window.
				if err := chromedp.Do(step(),
					chromedp.SendKeys(chromedp.CSS(`input#user_id`), longUser),
					chromedp.Click(chromedp.CSS(`form.search button`)),
					chromedp.WaitVisible(chromedp.CSS(`.record`)),
				); err != nil {
					t.Fatalf("finding a user: %v", err)
				}
				rec, err := chromedp.Run(step(), chromedp.Text(chromedp.CSS(".record")))
				if err != nil {
					t.Fatal(err)
				}
				for _, want := range []string{longUser, longReason, "by oncall"} {
					if !strings.Contains(rec, want) {
						t.Errorf("got record %q, want %q in it", rec, want)
					}
				}
				fitsWindow(step(), t, "a user's record")

				// A failed load is a page with a way back, not JSON.
				if err := chromedp.Do(step(),
					chromedp.Navigate(base+"/ops/no-such-page"),
					chromedp.WaitVisible(chromedp.CSS(`.back a`)),
				); err != nil {
					t.Fatalf("opening an unknown page: %v", err)
				}
				msg, err := chromedp.Run(step(), chromedp.Text(chromedp.CSS(".flash")))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(msg, "no such route") {
					t.Errorf("got error page saying %q, want no such route", msg)
				}
				fitsWindow(step(), t, "an error page")
				if err := chromedp.Do(step(),
					chromedp.Click(chromedp.CSS(`.back a`)),
					chromedp.WaitVisible(row),
				); err != nil {
					t.Fatalf("going back from the error page: %v", err)
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
				chromedp.Navigate(base+"/ops/"),
				chromedp.WaitVisible(chromedp.CSS(`input#key`)),
			); err != nil {
				t.Fatalf("logging out: %v", err)
			}
		})
	}
}
