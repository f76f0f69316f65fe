package opsui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/internal/apptest"
)

// browserAccept is what Chromium sends with a navigation or a form post.
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// wantHTMLError checks an error page of the ops page: the status kept, HTML
// in the page's style, the message, and a link back to back.
func wantHTMLError(t *testing.T, res *http.Response, body string, status int, says, back string) {
	t.Helper()
	if res.StatusCode != status {
		t.Errorf("got status %d, want %d", res.StatusCode, status)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/html; charset=UTF-8" {
		t.Errorf("got Content-Type %q, want text/html; charset=UTF-8", ct)
	}
	for _, want := range []string{`<link rel="stylesheet" href="/ops/assets/ops.css">`, says, `<a href="` + back + `">`} {
		if !strings.Contains(body, want) {
			t.Errorf("got page %s, want %q in it", body, want)
		}
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("got CSP %q, want the page's", csp)
	}
}

// The page's form posts and loads come from a browser, which is shown an
// HTML page with a way back when they fail; scripts and the JSON API keep
// problem+json.
func TestOpsPageErrorsAreHTMLForBrowsers(t *testing.T) {
	t.Parallel()
	env := newLoginEnv(t, handlers.DefaultConfig())
	flagInTenant(t, env.E, "u-1")
	b := newBrowser(t, env.E)
	b.mustLogin()

	t.Run("a form post with a wrong CSRF token is a 403 page linking to the page", func(t *testing.T) {
		form := url.Values{"csrf": {strings.Repeat("0", 64)}, "user_id": {"u-1"}}
		res, body := b.do("POST", "/ops/clear", form, "Accept", browserAccept)
		wantHTMLError(t, res, body, 403, "missing or wrong CSRF token", "/ops/")
		if got := apiCall(t, env.E, "GET", "/abuse/flagged/u-1", loginOpsKey); got != 200 {
			t.Errorf("u-1 after the refused clear: got %d, want 200", got)
		}
	})
	t.Run("a cross-origin form post is a 403 page", func(t *testing.T) {
		form := url.Values{"csrf": {b.csrf()}, "user_id": {"u-1"}}
		res, body := b.do("POST", "/ops/ban", form, "Accept", browserAccept, "Sec-Fetch-Site", "cross-site")
		wantHTMLError(t, res, body, 403, "cross-origin form posts are refused", "/ops/")
	})
	t.Run("a login without the CSRF token is a 403 page linking to the login form", func(t *testing.T) {
		lb := newBrowser(t, env.E)
		res, body := lb.do("POST", "/ops/login", url.Values{"key": {loginOpsKey}}, "Accept", browserAccept)
		wantHTMLError(t, res, body, 403, "CSRF token", "/ops/login")
		if setCookie(res, sessionName) != nil {
			t.Error("got a session cookie from a refused login")
		}
	})
	t.Run("a logout without the CSRF token is a 403 page linking to the login form", func(t *testing.T) {
		res, body := b.do("POST", "/ops/logout", url.Values{}, "Accept", browserAccept)
		wantHTMLError(t, res, body, 403, "CSRF token", "/ops/login")
	})
	t.Run("a form post that is not a form is a 415 page", func(t *testing.T) {
		res, body := b.do("POST", "/ops/clear", nil, "Accept", browserAccept, "Content-Type", "text/plain")
		wantHTMLError(t, res, body, 415, "application/x-www-form-urlencoded", "/ops/")
	})
	t.Run("the page with a client key is a 403 page", func(t *testing.T) {
		res, body := newBrowser(t, env.E).do("GET", "/ops/", nil, "Accept", browserAccept, "Authorization", "Bearer "+loginClientKey)
		wantHTMLError(t, res, body, 403, "403 Forbidden", "/ops/")
	})
	t.Run("an unknown page is a 404 page", func(t *testing.T) {
		res, body := b.do("GET", "/ops/no-such-page", nil, "Accept", browserAccept)
		wantHTMLError(t, res, body, 404, "no such route", "/ops/")
	})

	t.Run("a script without Accept text/html still gets problem+json on the page's routes", func(t *testing.T) {
		form := url.Values{"csrf": {strings.Repeat("0", 64)}, "user_id": {"u-1"}}
		res, body := b.do("POST", "/ops/clear", form)
		if ct := res.Header.Get("Content-Type"); res.StatusCode != 403 || ct != "application/problem+json" {
			t.Errorf("got %d %q (%s), want 403 application/problem+json", res.StatusCode, ct, body)
		}
	})
	t.Run("the JSON API keeps problem+json even for a browser's Accept", func(t *testing.T) {
		apptest.Do(t, env.E, "GET", "/abuse/flagged", "", "Accept", browserAccept,
			"Authorization", "Bearer "+loginClientKey).Problem(t, 403, "forbidden")
		apptest.Do(t, env.E, "GET", "/abuse/flagged/u-1", "", "Accept", browserAccept).Problem(t, 401, "unauthorized")
	})
}

// The page's HTML error answers are problem answers of the same table:
// each is counted once in leasegate_http_problems_total, as the JSON ones.
func TestOpsPageErrorsAreCountedAsProblems(t *testing.T) {
	t.Parallel()
	env := newLoginEnv(t, handlers.DefaultConfig())
	b := newBrowser(t, env.E)
	b.mustLogin()
	form := url.Values{"csrf": {strings.Repeat("0", 64)}, "user_id": {"u-1"}}
	res, body := b.do("POST", "/ops/clear", form, "Accept", browserAccept)
	wantHTMLError(t, res, body, 403, "missing or wrong CSRF token", "/ops/")
	if res, _ := b.do("POST", "/ops/clear", form); res.StatusCode != 403 {
		t.Fatalf("the script's post: got %d, want 403", res.StatusCode)
	}
	if got := testutil.ToFloat64(env.Metrics.Problems.WithLabelValues("/ops/clear", "forbidden")); got != 2 {
		t.Errorf(`http_problems_total{route="/ops/clear",type="forbidden"}: got %v, want 2 (one HTML, one JSON)`, got)
	}
}
