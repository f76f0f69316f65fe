package opsui_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/internal/apptest"
)

func flagUser(t *testing.T, env *apptest.App, lock, user string) {
	t.Helper()
	for i := 0; i < 2; i++ {
		env.Do(t, "POST", "/user-locks/"+lock+"/"+url.PathEscape(user), "").Want(t, 200)
	}
}

// opsGet loads the page and returns the body and the CSRF cookie.
func opsGet(t *testing.T, env *apptest.App, target string) (*http.Response, string, *http.Cookie) {
	t.Helper()
	res := apptest.Serve(env.E, httptest.NewRequest("GET", target, nil))
	var ck *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == csrfName {
			ck = c
		}
	}
	return res.Response, string(res.Raw), ck
}

func opsPost(t *testing.T, env *apptest.App, path string, form url.Values, ck *http.Cookie, hdr ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if ck != nil {
		req.AddCookie(ck)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return apptest.Serve(env.E, req).Response
}

func TestOpsPage(t *testing.T) {
	t.Parallel()
	pol := abuse.DefaultPolicies()
	pol.Default.MaxAttempts = 2
	env := newAbuseEnv(t, pol)
	hostile := `<script>alert(1)</script>"'`
	flagUser(t, env, "login", hostile)
	flagUser(t, env, "login", "plain-user")

	t.Run("lists flagged users escaped, with a strict cookie and a CSP", func(t *testing.T) {
		res, body, ck := opsGet(t, env, "/ops/")
		if res.StatusCode != 200 {
			t.Fatalf("got %d: %s", res.StatusCode, body)
		}
		if strings.Contains(body, "<script>") {
			t.Error("got an unescaped <script> from a user id in the page")
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(body, "plain-user") {
			t.Error("got a page without both flagged users")
		}
		if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
			t.Errorf("got CSRF cookie %+v, want HttpOnly and SameSite=Strict", ck)
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("got CSP %q", csp)
		}
		if !strings.Contains(body, `name="csrf" value="`+ck.Value+`"`) {
			t.Error("got forms without the CSRF token")
		}
	})

	_, _, ck := opsGet(t, env, "/ops/")
	form := url.Values{"csrf": {ck.Value}, "user_id": {"plain-user"}}

	refusals := []struct {
		name string
		form url.Values
		ck   *http.Cookie
		hdr  []string
		code int
	}{
		{"no cookie", form, nil, nil, 403},
		{"no token", url.Values{"user_id": {"plain-user"}}, ck, nil, 403},
		{"a wrong token", url.Values{"csrf": {strings.Repeat("0", 64)}, "user_id": {"plain-user"}}, ck, nil, 403},
		{"a cross-site fetch", form, ck, []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"a foreign Origin", form, ck, []string{"Origin", "https://evil.example"}, 403},
	}
	for _, tc := range refusals {
		t.Run("refuses a clear with "+tc.name, func(t *testing.T) {
			res := opsPost(t, env, "/ops/clear", tc.form, tc.ck, tc.hdr...)
			if res.StatusCode != tc.code {
				t.Errorf("got %d, want %d", res.StatusCode, tc.code)
			}
			env.Do(t, "GET", "/abuse/flagged/plain-user", "").Want(t, 200)
		})
	}

	t.Run("a JSON body is not a form", func(t *testing.T) {
		req := httptest.NewRequest("POST", "/ops/clear", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		req.AddCookie(ck)
		if got := apptest.Serve(env.E, req).StatusCode; got != 415 {
			t.Errorf("got %d, want 415", got)
		}
	})

	t.Run("ban, unban and clear work and redirect back", func(t *testing.T) {
		ban := url.Values{"csrf": {ck.Value}, "user_id": {"plain-user"}, "seconds": {"3600"}, "reason": {"bot"}, "lock": {"login"}}
		res := opsPost(t, env, "/ops/ban", ban, ck, "Sec-Fetch-Site", "same-origin")
		if res.StatusCode != 303 || !strings.HasPrefix(res.Header.Get("Location"), "/ops/?") {
			t.Fatalf("got %d to %q, want 303 to the page", res.StatusCode, res.Header.Get("Location"))
		}
		env.Do(t, "POST", "/user-locks/login/plain-user", "").Want(t, 429)
		_, body, _ := opsGet(t, env, res.Header.Get("Location"))
		if !strings.Contains(body, "Banned") || !strings.Contains(body, `class="banned"`) {
			t.Error("got a page without the ban")
		}
		res = opsPost(t, env, "/ops/unban", form, ck)
		if res.StatusCode != 303 {
			t.Fatalf("unban: got %d", res.StatusCode)
		}
		env.Do(t, "POST", "/user-locks/login/plain-user", "").Want(t, 200)
		res = opsPost(t, env, "/ops/clear", form, ck)
		if loc := res.Header.Get("Location"); res.StatusCode != 303 || !strings.Contains(loc, "msg=cleared") {
			t.Fatalf("clear: got %d to %q", res.StatusCode, loc)
		}
		env.Do(t, "GET", "/abuse/flagged/plain-user", "").Want(t, 404)
		res = opsPost(t, env, "/ops/clear", form, ck)
		if loc := res.Header.Get("Location"); !strings.Contains(loc, "msg=notfound") {
			t.Errorf("second clear: got %q, want msg=notfound", loc)
		}
	})

	t.Run("a bad ban length changes nothing", func(t *testing.T) {
		for _, secs := range []string{"0", "1.5", "x", "31536001"} {
			bad := url.Values{"csrf": {ck.Value}, "user_id": {hostile}, "seconds": {secs}}
			res := opsPost(t, env, "/ops/ban", bad, ck)
			if loc := res.Header.Get("Location"); !strings.Contains(loc, "msg=invalid") {
				t.Errorf("seconds %q: got %q, want msg=invalid", secs, loc)
			}
		}
		env.Do(t, "POST", "/user-locks/login/"+url.PathEscape(hostile), "").Want(t, 200)
	})

	t.Run("a client key may not see the page", func(t *testing.T) {
		env.Do(t, "GET", "/ops/", "", "X-Test-Role", "client").Want(t, 403)
	})

	t.Run("a hand-edited cursor goes back to the first page", func(t *testing.T) {
		res, _, _ := opsGet(t, env, "/ops/?cursor=bogus")
		if res.StatusCode != 303 {
			t.Errorf("got %d, want 303", res.StatusCode)
		}
	})
}
