package opsui_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/leasegate/leasegate/handlers"
)

// The "What if" view answers a GET form: the summary and the users a
// candidate treats otherwise, and a bad field named, with nothing run.
func TestWhatIfShowsTheUsersACandidateTreatsOtherwise(t *testing.T) {
	t.Parallel()
	env := newLoginEnv(t, handlers.DefaultConfig()) // max_attempts 2
	flagInTenant(t, env.E, "alice")                 // two attempts: flagged
	if body := opsPageAs(t, env, "/ops/"); !strings.Contains(body, `action="/ops/whatif"`) {
		t.Errorf("got the review page without a What if form: %s", body)
	}
	body := opsPageAs(t, env, "/ops/whatif?lock=login&max_attempts=3")
	for _, want := range []string{"No longer flagged: 1", `<tr data-user="alice">`, "Newly flagged: 0", "max_attempts 3", "2 shown"} {
		if !strings.Contains(body, want) {
			t.Errorf("got page %s, want %q in it", body, want)
		}
	}
	req := httptest.NewRequest("GET", "/ops/whatif?lock=login&max_attempts=0", nil)
	req.Header.Set("Authorization", "Bearer "+loginOpsKey)
	rec := httptest.NewRecorder()
	env.E.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "<code>policy.max_attempts</code>") {
		t.Errorf("max_attempts 0: got %d %s, want 422 naming policy.max_attempts", rec.Code, rec.Body)
	}
	req = httptest.NewRequest("GET", "/ops/whatif?lock=login&hours=soon", nil)
	req.Header.Set("Authorization", "Bearer "+loginOpsKey)
	rec = httptest.NewRecorder()
	env.E.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "<code>hours</code>") {
		t.Errorf("hours=soon: got %d %s, want 422 naming hours", rec.Code, rec.Body)
	}
	if got := opsPageAs(t, env, "/ops/whatif"); strings.Contains(got, "Recorded") {
		t.Error("got a summary with no lock asked, want the empty form")
	}
}

// In Chromium, under the page's CSP and with no script: fill the form on
// the review page, submit, read the lists.
func TestWhatIfInChromium(t *testing.T) {
	t.Parallel()
	bctx := startChromium(t)
	env := newLoginEnv(t, handlers.DefaultConfig())
	e := env.Instance(t, nil, nil) // open mode: no login step
	seedFlags(t, env, e)
	base, step := openTab(t, bctx, e)
	if err := chromedp.Do(step(),
		chromedp.Navigate(base+"/ops/?lock=login"),
		chromedp.WaitVisible(chromedp.CSS(`form.whatif`)),
		chromedp.SendKeys(chromedp.CSS(`input#wmax`), "9"),
		chromedp.Click(chromedp.CSS(`form.whatif button`)),
		chromedp.WaitVisible(chromedp.CSS(`table.summary`)),
	); err != nil {
		t.Fatalf("submitting the What if form: %v", err)
	}
	text, err := chromedp.Run(step(), chromedp.Text(chromedp.CSS(`main`)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"No longer flagged: 2", "scraper-17", "u-clear-me", "max_attempts 9"} {
		if !strings.Contains(text, want) {
			t.Errorf("got page text %q, want %q in it", text, want)
		}
	}
	if err := chromedp.Do(step(), chromedp.Click(chromedp.CSS(`tr[data-user="scraper-17"] summary`))); err != nil {
		t.Fatalf("opening the attempt times: %v", err)
	}
	times, err := chromedp.Run(step(), chromedp.Evaluate[int](`document.querySelectorAll('tr[data-user="scraper-17"] details[open] time').length`))
	if err != nil || times != 2 {
		t.Errorf("got %d attempt times of scraper-17 (%v), want 2", times, err)
	}
	fitsWindow(step(), t, "the What if view")
}
