package opsui_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/auth"
	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
)

const (
	loginOpsKey    = "lg_ops-key-for-the-login-tests-0001"
	loginClientKey = "lg_client-key-for-the-login-tests-01"
	loginTenant    = "shop"
	sessionName    = "leasegate_ops_session"
	csrfName       = "leasegate_ops_csrf"
)

// loginEntries are the key file of the login tests: an ops key "oncall"
// and a client key "checkout", both of tenant shop.
func loginEntries() []string {
	return []string{
		"oncall:ops:" + loginTenant + ":" + auth.HashKey(loginOpsKey),
		"checkout:client:" + loginTenant + ":" + auth.HashKey(loginClientKey),
	}
}

// newLoginEnv is a gateway with API keys (the real auth.Keyring, the
// ops-page logins of auth.NewSessions) and user locks flagging at the
// second attempt, on miniredis, with the abuse log captured.
func newLoginEnv(t *testing.T, cfg handlers.Config) *apptest.App {
	t.Helper()
	pol := abuse.DefaultPolicies()
	pol.Default.MaxAttempts = 2
	pol.AttemptLogMaxEntries = 1000 // the "What if" view
	return apptest.NewApp(t, redistest.OnMini(t), apptest.Options{
		Config: &cfg, UserLocks: true, Policies: pol, Keys: loginEntries(), Sessions: true,
	})
}

// sessionSecret sets the ops-page session secret of an Instance.
func sessionSecret(secret string) func(*apptest.Options) {
	return func(o *apptest.Options) { o.SessionSecret = secret }
}

// browser is a cookie jar for one user agent, enough for these tests.
type browser struct {
	t       *testing.T
	e       *echo.Echo
	cookies map[string]*http.Cookie
	tls     bool
}

func newBrowser(t *testing.T, e *echo.Echo) *browser {
	return &browser{t: t, e: e, cookies: map[string]*http.Cookie{}}
}

// do sends a request with the jar's cookies and keeps what it sets;
// form, when not nil, is posted as a form. hdr is name, value pairs.
func (b *browser) do(method, target string, form url.Values, hdr ...string) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, target, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if b.tls {
		req.TLS = &tls.ConnectionState{}
	}
	for _, c := range b.cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res := apptest.Serve(b.e, req)
	for _, c := range res.Cookies() {
		if c.MaxAge < 0 {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c
		}
	}
	return res.Response, string(res.Raw)
}

func (b *browser) csrf() string {
	if c := b.cookies[csrfName]; c != nil {
		return c.Value
	}
	return ""
}

// login loads the form and posts key; it returns the answer to the post.
func (b *browser) login(key string) (*http.Response, string) {
	b.t.Helper()
	if res, body := b.do("GET", "/ops/login", nil); res.StatusCode != 200 {
		b.t.Fatalf("GET /ops/login: got %d, want 200: %s", res.StatusCode, body)
	}
	return b.do("POST", "/ops/login", url.Values{"csrf": {b.csrf()}, "key": {key}})
}

// mustLogin logs in with the ops key and returns the session cookie.
func (b *browser) mustLogin() *http.Cookie {
	b.t.Helper()
	res, body := b.login(loginOpsKey)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ops/" {
		b.t.Fatalf("login: got %d to %q, want 303 to /ops/: %s", res.StatusCode, res.Header.Get("Location"), body)
	}
	ck := b.cookies[sessionName]
	if ck == nil {
		b.t.Fatal("login: got no session cookie")
	}
	return ck
}

// setCookie returns the Set-Cookie of res named name, or nil.
func setCookie(res *http.Response, name string) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// forgeSession builds a session cookie value as docs/abuse.md describes
// it, MAC-keyed by secret.
func forgeSession(name, tenant string, exp time.Time, secret []byte) string {
	payload := base64.RawURLEncoding.EncodeToString([]byte(name + "|" + tenant + "|" + strconv.FormatInt(exp.Unix(), 10)))
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("leasegate ops session v1\x00" + payload))
	return payload + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func opsKeyHash() []byte {
	h := sha256.Sum256([]byte(loginOpsKey))
	return h[:]
}

func wantLoginRedirect(t *testing.T, res *http.Response) {
	t.Helper()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ops/login" {
		t.Errorf("got %d to %q, want 303 to /ops/login", res.StatusCode, res.Header.Get("Location"))
	}
}

func flagInTenant(t *testing.T, e *echo.Echo, user string) {
	t.Helper()
	for i := 0; i < 2; i++ {
		req := httptest.NewRequest("POST", "/user-locks/login/"+url.PathEscape(user), nil)
		req.Header.Set("Authorization", "Bearer "+loginClientKey)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("attempt %d for %s: got %d, want 200: %s", i+1, user, rec.Code, rec.Body)
		}
	}
}

func apiCall(t *testing.T, e *echo.Echo, method, target, key string, cookies ...*http.Cookie) int {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for _, c := range cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	return apptest.Serve(e, req).StatusCode
}

func TestOpsLogin(t *testing.T) {
	t.Parallel()
	env := newLoginEnv(t, handlers.DefaultConfig())
	flagInTenant(t, env.E, "u-flagged")

	t.Run("the page sends a browser without a session to the login form", func(t *testing.T) {
		b := newBrowser(t, env.E)
		res, _ := b.do("GET", "/ops/", nil)
		wantLoginRedirect(t, res)
		res, _ = b.do("POST", "/ops/clear", url.Values{"user_id": {"u-flagged"}})
		wantLoginRedirect(t, res)
		res, body := b.do("GET", "/ops/login", nil)
		if res.StatusCode != 200 || !strings.Contains(body, `action="/ops/login"`) || !strings.Contains(body, `name="csrf" value="`+b.csrf()+`"`) {
			t.Errorf("got %d with a form %v, want 200 and a form carrying the CSRF token", res.StatusCode, strings.Contains(body, "<form"))
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("got CSP %q on the login form", csp)
		}
	})

	t.Run("the stylesheet needs no login, the JSON API still does", func(t *testing.T) {
		if got := apiCall(t, env.E, "GET", "/ops/assets/ops.css", ""); got != 200 {
			t.Errorf("stylesheet: got %d, want 200", got)
		}
		if got := apiCall(t, env.E, "GET", "/abuse/flagged", ""); got != 401 {
			t.Errorf("/abuse/flagged: got %d, want 401", got)
		}
	})

	refusals := []struct {
		name   string
		key    string
		status int
	}{
		{"an unknown key", "lg_this-key-is-not-configured-at-all", http.StatusUnauthorized},
		{"a key too short to be one", "short", http.StatusUnauthorized},
		{"nothing", "", http.StatusUnauthorized},
		{"a client key", loginClientKey, http.StatusForbidden},
	}
	var failText string
	for _, tc := range refusals {
		t.Run("a login with "+tc.name+" shows the form again and sets no session", func(t *testing.T) {
			b := newBrowser(t, env.E)
			res, body := b.login(tc.key)
			if res.StatusCode != tc.status {
				t.Fatalf("got %d, want %d", res.StatusCode, tc.status)
			}
			if ck := setCookie(res, sessionName); ck != nil {
				t.Errorf("got a session cookie %q, want none", ck.Value)
			}
			if !strings.Contains(body, `action="/ops/login"`) {
				t.Error("got no login form in the answer")
			}
			start := strings.Index(body, `class="flash error"`)
			if start < 0 {
				t.Fatal("got no error message")
			}
			msg := body[start : start+strings.Index(body[start:], "</p>")]
			if failText == "" {
				failText = msg
			}
			if msg != failText {
				t.Errorf("got message %q, want the same message for every refusal (%q)", msg, failText)
			}
			if tc.status == http.StatusUnauthorized && res.Header.Get("WWW-Authenticate") == "" {
				t.Error("got a 401 without WWW-Authenticate")
			}
			if res, _ := b.do("GET", "/ops/", nil); res.StatusCode != http.StatusSeeOther {
				t.Errorf("the page after a refused login: got %d, want 303", res.StatusCode)
			}
		})
	}

	t.Run("a login post without the CSRF token or from another site is refused", func(t *testing.T) {
		b := newBrowser(t, env.E)
		b.do("GET", "/ops/login", nil)
		res, _ := b.do("POST", "/ops/login", url.Values{"key": {loginOpsKey}})
		if res.StatusCode != 403 || setCookie(res, sessionName) != nil {
			t.Errorf("no token: got %d (session set: %v), want 403 and no session", res.StatusCode, setCookie(res, sessionName) != nil)
		}
		res, _ = b.do("POST", "/ops/login", url.Values{"csrf": {b.csrf()}, "key": {loginOpsKey}}, "Sec-Fetch-Site", "cross-site")
		if res.StatusCode != 403 || setCookie(res, sessionName) != nil {
			t.Errorf("cross-site: got %d, want 403 and no session", res.StatusCode)
		}
	})

	b := newBrowser(t, env.E)
	csrfBefore := ""
	t.Run("an ops key logs in with a strict session cookie", func(t *testing.T) {
		b.do("GET", "/ops/login", nil)
		csrfBefore = b.csrf()
		res, _ := b.do("POST", "/ops/login", url.Values{"csrf": {csrfBefore}, "key": {" " + loginOpsKey + "\n"}})
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ops/" {
			t.Fatalf("got %d to %q, want 303 to /ops/", res.StatusCode, res.Header.Get("Location"))
		}
		ck := setCookie(res, sessionName)
		if ck == nil {
			t.Fatal("got no session cookie")
		}
		if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/ops" || ck.Secure {
			t.Errorf("got cookie %+v, want HttpOnly, SameSite=Strict, Path=/ops, not Secure over plain HTTP", ck)
		}
		if want := int(auth.DefaultSessionTTL / time.Second); ck.MaxAge != want {
			t.Errorf("got Max-Age %d, want %d", ck.MaxAge, want)
		}
		if strings.Contains(ck.Value, loginOpsKey) || strings.Contains(ck.Value, auth.HashKey(loginOpsKey)) {
			t.Error("got the key or its hash in the cookie")
		}
		if b.csrf() == csrfBefore {
			t.Error("got the same CSRF token after login, want a new one")
		}
	})

	t.Run("the session shows the tenant's flagged users and names the operator", func(t *testing.T) {
		res, body := b.do("GET", "/ops/", nil)
		if res.StatusCode != 200 {
			t.Fatalf("got %d, want 200", res.StatusCode)
		}
		for _, want := range []string{`data-user="u-flagged"`, "<code>oncall</code>", "<code>" + loginTenant + "</code>", `action="/ops/logout"`} {
			if !strings.Contains(body, want) {
				t.Errorf("got a page without %s", want)
			}
		}
		if res, _ := b.do("GET", "/ops", nil); res.StatusCode != http.StatusMovedPermanently {
			t.Errorf("/ops: got %d, want 301", res.StatusCode)
		}
	})

	t.Run("the session cookie is not accepted by the JSON API", func(t *testing.T) {
		ck := b.cookies[sessionName]
		for _, r := range []struct{ method, target string }{
			{"GET", "/abuse/flagged"},
			{"GET", "/abuse/flagged/u-flagged"},
			{"DELETE", "/abuse/flagged/u-flagged"},
			{"POST", "/abuse/bans/u-flagged"},
			{"DELETE", "/abuse/bans/u-flagged"},
			{"GET", "/locks/x"},
			{"GET", "/metrics"},
		} {
			if got := apiCall(t, env.E, r.method, r.target, "", ck); got != 401 {
				t.Errorf("%s %s with the session cookie: got %d, want 401", r.method, r.target, got)
			}
		}
		if got := apiCall(t, env.E, "GET", "/abuse/flagged/u-flagged", loginOpsKey); got != 200 {
			t.Errorf("the flag after those calls: got %d, want 200 (untouched)", got)
		}
	})

	t.Run("a clear through the session is audited under the key's name", func(t *testing.T) {
		res, _ := b.do("POST", "/ops/clear", url.Values{"csrf": {b.csrf()}, "user_id": {"u-flagged"}})
		if loc := res.Header.Get("Location"); res.StatusCode != 303 || !strings.Contains(loc, "msg=cleared") {
			t.Fatalf("got %d to %q, want 303 with msg=cleared", res.StatusCode, loc)
		}
		var rec map[string]any
		for _, line := range strings.Split(strings.TrimSpace(env.AbuseLog.String()), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["event"] == "flags_cleared" {
				rec = m
			}
		}
		if rec == nil || rec["operator"] != "oncall" || rec["tenant"] != loginTenant {
			t.Errorf("got audit record %v, want operator oncall in tenant %s", rec, loginTenant)
		}
		if got := apiCall(t, env.E, "GET", "/abuse/flagged/u-flagged", loginOpsKey); got != 404 {
			t.Errorf("the flag after the clear: got %d, want 404", got)
		}
	})

	t.Run("the old CSRF token no longer works after login", func(t *testing.T) {
		res, _ := b.do("POST", "/ops/clear", url.Values{"csrf": {csrfBefore}, "user_id": {"u-flagged"}})
		if res.StatusCode != 403 {
			t.Errorf("got %d, want 403", res.StatusCode)
		}
	})

	t.Run("another gateway with the same keys accepts the session", func(t *testing.T) {
		other := newBrowser(t, env.Instance(t, apptest.Keyring(t, loginEntries()...), nil))
		other.cookies = b.cookies
		if res, _ := other.do("GET", "/ops/", nil); res.StatusCode != 200 {
			t.Errorf("got %d, want 200", res.StatusCode)
		}
	})

	t.Run("a logged-in browser going to the login form is sent to the page", func(t *testing.T) {
		res, _ := b.do("GET", "/ops/login", nil)
		if res.StatusCode != 303 || res.Header.Get("Location") != "/ops/" {
			t.Errorf("got %d to %q, want 303 to /ops/", res.StatusCode, res.Header.Get("Location"))
		}
	})

	t.Run("logout needs the CSRF token, then drops the session", func(t *testing.T) {
		res, _ := b.do("POST", "/ops/logout", url.Values{})
		if res.StatusCode != 403 || b.cookies[sessionName] == nil {
			t.Fatalf("without a token: got %d, want 403 and the session kept", res.StatusCode)
		}
		res, _ = b.do("POST", "/ops/logout", url.Values{"csrf": {b.csrf()}})
		if res.StatusCode != 303 || res.Header.Get("Location") != "/ops/login" {
			t.Errorf("got %d to %q, want 303 to /ops/login", res.StatusCode, res.Header.Get("Location"))
		}
		if b.cookies[sessionName] != nil {
			t.Error("got the session cookie kept, want it dropped")
		}
		res, _ = b.do("GET", "/ops/", nil)
		wantLoginRedirect(t, res)
	})

	t.Run("an ops key in a Bearer header still opens the page", func(t *testing.T) {
		if got := apiCall(t, env.E, "GET", "/ops/", loginOpsKey); got != 200 {
			t.Errorf("got %d, want 200", got)
		}
		if got := apiCall(t, env.E, "GET", "/ops/", loginClientKey); got != 403 {
			t.Errorf("client key: got %d, want 403", got)
		}
	})
}

func TestOpsSessionRefusals(t *testing.T) {
	t.Parallel()
	env := newLoginEnv(t, handlers.DefaultConfig())
	now := time.Now()
	valid := newBrowser(t, env.E).mustLogin().Value
	payload, mac, _ := strings.Cut(valid, ".")
	rawPayload, _ := base64.RawURLEncoding.DecodeString(payload)
	flipped := []byte(mac)
	flipped[3] ^= 'A' ^ 'B'
	if flipped[3] == mac[3] {
		flipped[3] = 'x'
	}

	cases := []struct {
		name  string
		value string
	}{
		{"an expired session", forgeSession("oncall", loginTenant, now.Add(-time.Second), opsKeyHash())},
		{"an expiry beyond the session lifetime", forgeSession("oncall", loginTenant, now.Add(auth.DefaultSessionTTL+time.Hour), opsKeyHash())},
		{"another tenant under a valid MAC of the wrong payload", base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(rawPayload), "|"+loginTenant+"|", "|other|", 1))) + "." + mac},
		{"a tampered MAC", payload + "." + string(flipped)},
		{"a session signed with another secret", forgeSession("oncall", loginTenant, now.Add(time.Hour), []byte("not the key's hash"))},
		{"a client key's session", forgeSession("checkout", loginTenant, now.Add(time.Hour), func() []byte { h := sha256.Sum256([]byte(loginClientKey)); return h[:] }())},
		{"an unknown key name", forgeSession("nobody", loginTenant, now.Add(time.Hour), opsKeyHash())},
		{"no MAC", payload},
		{"garbage", "%%%.%%%"},
		{"an oversized value", strings.Repeat("A", 600) + "." + mac},
	}
	for _, tc := range cases {
		t.Run("the page refuses "+tc.name+" and drops the cookie", func(t *testing.T) {
			b := newBrowser(t, env.E)
			b.cookies[sessionName] = &http.Cookie{Name: sessionName, Value: tc.value}
			res, _ := b.do("GET", "/ops/", nil)
			wantLoginRedirect(t, res)
			if ck := setCookie(res, sessionName); ck == nil || ck.MaxAge >= 0 {
				t.Errorf("got Set-Cookie %+v, want the cookie deleted", ck)
			}
			res, _ = b.do("POST", "/ops/clear", url.Values{"csrf": {b.csrf()}, "user_id": {"u"}})
			wantLoginRedirect(t, res)
		})
	}

	t.Run("a session built as documented is accepted (the refusals above are not format errors)", func(t *testing.T) {
		b := newBrowser(t, env.E)
		b.cookies[sessionName] = &http.Cookie{Name: sessionName, Value: forgeSession("oncall", loginTenant, now.Add(time.Hour), opsKeyHash())}
		if res, _ := b.do("GET", "/ops/", nil); res.StatusCode != 200 {
			t.Errorf("got %d, want 200", res.StatusCode)
		}
	})
}

func TestOpsSessionSecret(t *testing.T) {
	t.Parallel()
	env := newLoginEnv(t, handlers.DefaultConfig())
	const secret = "a-session-secret-of-at-least-32-bytes!"
	env.E = env.Instance(t, env.Ring, sessionSecret(secret))
	now := time.Now()

	t.Run("a session forged from the key file alone is refused", func(t *testing.T) {
		b := newBrowser(t, env.E)
		b.cookies[sessionName] = &http.Cookie{Name: sessionName, Value: forgeSession("oncall", loginTenant, now.Add(time.Hour), opsKeyHash())}
		res, _ := b.do("GET", "/ops/", nil)
		wantLoginRedirect(t, res)
	})
	t.Run("a login works and another gateway with the same secret accepts it", func(t *testing.T) {
		b := newBrowser(t, env.E)
		b.mustLogin()
		if res, _ := b.do("GET", "/ops/", nil); res.StatusCode != 200 {
			t.Fatalf("same gateway: got %d, want 200", res.StatusCode)
		}
		b.e = env.Instance(t, env.Ring, sessionSecret(secret))
		if res, _ := b.do("GET", "/ops/", nil); res.StatusCode != 200 {
			t.Errorf("second gateway, same secret: got %d, want 200", res.StatusCode)
		}
	})
	for _, tc := range []struct{ name, secret string }{
		{"another secret", "another-session-secret-of-32-bytes-or-more"},
		{"no secret", ""},
	} {
		t.Run("a gateway with "+tc.name+" refuses it", func(t *testing.T) {
			b := newBrowser(t, env.E)
			b.mustLogin()
			b.e = env.Instance(t, env.Ring, sessionSecret(tc.secret))
			res, _ := b.do("GET", "/ops/", nil)
			wantLoginRedirect(t, res)
		})
	}
}

func TestOpsSessionEndsWithItsKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		entries []string
	}{
		{"the key is removed", []string{loginEntries()[1]}},
		{"the key is rotated under the same name", []string{"oncall:ops:" + loginTenant + ":" + auth.HashKey("lg_the-new-ops-key-after-rotation"), loginEntries()[1]}},
		{"the key moves to another tenant", []string{"oncall:ops:other:" + auth.HashKey(loginOpsKey), loginEntries()[1]}},
		{"the key becomes a client key", []string{"oncall:client:" + loginTenant + ":" + auth.HashKey(loginOpsKey), loginEntries()[1]}},
	}
	for _, tc := range cases {
		t.Run("a session ends when "+tc.name, func(t *testing.T) {
			env := newLoginEnv(t, handlers.DefaultConfig())
			b := newBrowser(t, env.E)
			b.mustLogin()
			if res, _ := b.do("GET", "/ops/", nil); res.StatusCode != 200 {
				t.Fatalf("before the reload: got %d, want 200", res.StatusCode)
			}
			if err := env.Ring.Replace(apptest.Keys(t, tc.entries...)); err != nil {
				t.Fatal(err)
			}
			res, _ := b.do("GET", "/ops/", nil)
			wantLoginRedirect(t, res)
		})
	}
}

func TestOpsSessionCookieIsSecure(t *testing.T) {
	t.Parallel()
	t.Run("over TLS", func(t *testing.T) {
		b := newBrowser(t, newLoginEnv(t, handlers.DefaultConfig()).E)
		b.tls = true
		if ck := b.mustLogin(); !ck.Secure {
			t.Errorf("got %+v, want Secure", ck)
		}
		if ck := b.cookies[csrfName]; ck == nil || !ck.Secure {
			t.Errorf("got CSRF cookie %+v, want Secure", ck)
		}
	})
	t.Run("behind a TLS proxy when configured", func(t *testing.T) {
		cfg := handlers.DefaultConfig()
		cfg.OpsSecureCookies = true
		env := newLoginEnv(t, cfg)
		b := newBrowser(t, env.Instance(t, env.Ring, func(o *apptest.Options) { o.SessionTTL = 30 * time.Minute }))
		ck := b.mustLogin()
		if !ck.Secure || ck.MaxAge != 1800 {
			t.Errorf("got %+v, want Secure with Max-Age 1800", ck)
		}
	})
}

func TestOpsPageInOpenModeNeedsNoLogin(t *testing.T) {
	t.Parallel()
	env := newLoginEnv(t, handlers.DefaultConfig())
	e := env.Instance(t, nil, nil)
	b := newBrowser(t, e)
	if res, _ := b.do("GET", "/ops/", nil); res.StatusCode != 200 {
		t.Errorf("GET /ops/: got %d, want 200", res.StatusCode)
	}
	if res, _ := b.do("GET", "/ops/login", nil); res.StatusCode != 303 || res.Header.Get("Location") != "/ops/" {
		t.Errorf("GET /ops/login: got %d to %q, want 303 to /ops/", res.StatusCode, res.Header.Get("Location"))
	}
	if res, _ := b.do("POST", "/ops/login", url.Values{"csrf": {b.csrf()}, "key": {"anything-at-all-here"}}); res.StatusCode != 303 || setCookie(res, sessionName) != nil {
		t.Errorf("POST /ops/login: got %d, want 303 and no session", res.StatusCode)
	}
}
