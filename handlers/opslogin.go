package handlers

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"
)

// The /ops/ page's browser login. A browser cannot send
// "Authorization: Bearer", so with API keys an operator pastes an ops key
// into the form at /ops/login once and gets a session cookie that the
// page's own routes (GET /ops/ and its form posts) accept; no other route
// looks at it, so the JSON API stays Bearer-only and has no CSRF surface.
//
// The session is stateless, so any number of gateways behind a load
// balancer that share the key file (and nothing else) accept each other's
// sessions:
//
//	value   = payload "." base64url(HMAC-SHA256(secret, context 0x00 payload))
//	payload = base64url(key name "|" tenant "|" expiry in Unix seconds)
//
// secret is the key's Principal.Secret (auth: its stored SHA-256), or,
// when Config.OpsSessionSecret is set, HMAC-SHA256(OpsSessionSecret,
// keyContext 0x00 Principal.Secret): then reading the key file is not
// enough to forge a session, and every gateway sharing the file and the
// secret still accepts the others' sessions. The key is looked up by name
// at every request: removing or changing the key, or giving
// its name another tenant or the client role, ends its sessions at once.
// MACs are compared with hmac.Equal. Expiry is the gateway's clock (keep
// instances on NTP); an expiry further ahead than now + OpsSessionTTL is
// refused too, so shortening the TTL shortens sessions already issued.

// DefaultOpsSessionTTL is how long a login lasts unless configured.
const DefaultOpsSessionTTL = 8 * time.Hour

// sessionCookie names the ops page's session cookie.
const sessionCookie = "leasegate_ops_session"

// sessionMACContext separates these MACs from any other use of the secret.
const sessionMACContext = "leasegate ops session v1"

// sessionKey marks, on the echo.Context, a request authenticated by the
// session cookie.
const sessionKey = "leasegate.ops_session"

// maxSessionCookie bounds what is decoded: names and tenants are short.
const maxSessionCookie = 512

// sessionSkew is how far an expiry may lie beyond now + the TTL (clocks
// of two gateways differ a little).
const sessionSkew = time.Minute

// loginChallenge is the WWW-Authenticate of the login form's 401 (RFC
// 9110 wants one on every 401): a form-based scheme, after the "Cookie"
// scheme of draft-broyer-http-cookie-auth, that no browser answers with a
// password prompt.
const loginChallenge = `Cookie realm="leasegate ops", form-action="/ops/login", cookie-name="` + sessionCookie + `"`

// loginFailed is the one message a refused login shows, whatever the
// reason (unknown key, client key, malformed key).
const loginFailed = "That key was not accepted. Paste an API key with the ops role."

// sessionKeyContext separates the per-key session secret derived from
// OpsSessionSecret from any other use of that secret.
const sessionKeyContext = "leasegate ops session key v1"

// sessionSecret is the MAC key of p's sessions.
func (a *API) sessionSecret(p Principal) []byte {
	if a.cfg.OpsSessionSecret == "" {
		return p.Secret
	}
	m := hmac.New(sha256.New, []byte(a.cfg.OpsSessionSecret))
	m.Write([]byte(sessionKeyContext))
	m.Write([]byte{0})
	m.Write(p.Secret)
	return m.Sum(nil)
}

func sessionMAC(secret []byte, payload string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(sessionMACContext))
	m.Write([]byte{0})
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// sealSession returns the cookie value of a session of p until exp.
func (a *API) sealSession(p Principal, exp time.Time) string {
	payload := base64.RawURLEncoding.EncodeToString(
		[]byte(p.Name + "|" + p.Tenant + "|" + strconv.FormatInt(exp.Unix(), 10)))
	return payload + "." + base64.RawURLEncoding.EncodeToString(sessionMAC(a.sessionSecret(p), payload))
}

// openSession returns the principal of a session cookie value that is
// well formed, signed by a key configured now with the same tenant and
// the ops role, and not expired at now.
func (a *API) openSession(value string, now time.Time) (Principal, bool) {
	if a.login == nil || len(value) > maxSessionCookie {
		return Principal{}, false
	}
	payload, sig, ok := strings.Cut(value, ".")
	if !ok {
		return Principal{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Principal{}, false
	}
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return Principal{}, false
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 {
		return Principal{}, false
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return Principal{}, false
	}
	p, known := a.login.KeyByName(parts[0])
	secret := a.sessionSecret(p)
	if !known {
		// Spend the same work on an unknown name as on a known one.
		secret = make([]byte, sha256.Size)
	}
	if !hmac.Equal(mac, sessionMAC(secret, payload)) || !known {
		return Principal{}, false
	}
	expires := time.Unix(exp, 0)
	switch {
	case p.Tenant != parts[1], p.Role != RoleOps:
		return Principal{}, false
	case !now.Before(expires), expires.After(now.Add(a.cfg.OpsSessionTTL + sessionSkew)):
		return Principal{}, false
	}
	return p, true
}

// secureCookies: the page's cookies are Secure over TLS, and always when
// configured (a gateway behind a TLS-terminating proxy).
func (a *API) secureCookies(c echo.Context) bool {
	return a.cfg.OpsSecureCookies || c.IsTLS()
}

func (a *API) setSession(c echo.Context, value string, maxAge int) {
	c.SetCookie(&http.Cookie{
		Name:     sessionCookie,
		Value:    value,
		Path:     "/ops",
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   a.secureCookies(c),
		SameSite: http.SameSiteStrictMode,
	})
}

// clearSession tells the browser to drop its session cookie.
func (a *API) clearSession(c echo.Context) { a.setSession(c, "", -1) }

// viaSession reports whether the request was authenticated by the session
// cookie.
func viaSession(c echo.Context) bool {
	v, _ := c.Get(sessionKey).(bool)
	return v
}

// pageAuth authenticates the page's routes: a valid session cookie, else
// what the API accepts (a Bearer key, or open mode). Without either, a
// browser is sent to the login form (303), and a stale or forged cookie
// is dropped.
func (a *API) pageAuth(authn echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		viaAPI := authn(next)
		return func(c echo.Context) error {
			if a.login == nil {
				return viaAPI(c)
			}
			if ck, err := c.Cookie(sessionCookie); err == nil {
				if p, ok := a.openSession(ck.Value, time.Now()); ok {
					c.Set(TenantKey, p.Tenant)
					c.Set(RoleKey, p.Role)
					c.Set(OperatorKey, p.Name)
					c.Set(sessionKey, true)
					return next(c)
				}
				a.clearSession(c)
			}
			if c.Request().Header.Get(echo.HeaderAuthorization) != "" {
				return viaAPI(c)
			}
			return c.Redirect(http.StatusSeeOther, "/ops/login")
		}
	}
}

type loginView struct {
	CSRF  string
	Error string
}

// renderLogin answers with the login form.
func (a *API) renderLogin(c echo.Context, status int, errText string) error {
	var buf bytes.Buffer
	if err := loginPage.Execute(&buf, loginView{CSRF: a.csrfToken(c), Error: errText}); err != nil {
		return err
	}
	pageHeaders(c.Response().Header())
	return c.HTMLBlob(status, buf.Bytes())
}

// loginForm is GET /ops/login. In open mode, and for a browser already
// logged in, it goes straight to the page.
func (a *API) loginForm(c echo.Context) error {
	if a.login == nil {
		return c.Redirect(http.StatusSeeOther, "/ops/")
	}
	if ck, err := c.Cookie(sessionCookie); err == nil {
		if _, ok := a.openSession(ck.Value, time.Now()); ok {
			return c.Redirect(http.StatusSeeOther, "/ops/")
		}
		a.clearSession(c)
	}
	return a.renderLogin(c, http.StatusOK, "")
}

// loginSubmit is POST /ops/login: an ops key gets a session and goes to
// the page (303); any other key gets the form again with one message,
// 401 (not a key) or 403 (a key whose role may not use the page), and no
// cookie.
func (a *API) loginSubmit(c echo.Context) error {
	form, err := a.pageForm(c)
	if err != nil {
		return err
	}
	if a.login == nil {
		return c.Redirect(http.StatusSeeOther, "/ops/")
	}
	refuse := func(status int, reason string) error {
		a.log.Info("ops page login refused",
			zap.String("request_id", requestID(c)),
			zap.String("reason", reason),
			zap.String("remote_ip", c.RealIP()))
		if status == http.StatusUnauthorized {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, loginChallenge)
		}
		return a.renderLogin(c, status, loginFailed)
	}
	p, ok := a.login.CheckKey(strings.TrimSpace(form.Get("key")))
	if !ok {
		return refuse(http.StatusUnauthorized, "unknown")
	}
	if p.Role != RoleOps {
		return refuse(http.StatusForbidden, "role")
	}
	ttl := a.cfg.OpsSessionTTL
	a.setSession(c, a.sealSession(p, time.Now().Add(ttl)), int(ttl/time.Second))
	// A new CSRF token for the new session.
	a.newCSRFToken(c)
	a.log.Info("ops page login",
		zap.String("request_id", requestID(c)),
		zap.String("operator", p.Name),
		zap.String("tenant", p.Tenant),
		zap.String("remote_ip", c.RealIP()))
	return c.Redirect(http.StatusSeeOther, "/ops/")
}

// logout is POST /ops/logout: drops the session cookie and shows the
// login form. The session value itself stays valid until it expires (it
// is stateless); to end every session of a key, remove or change the key.
func (a *API) logout(c echo.Context) error {
	if _, err := a.pageForm(c); err != nil {
		return err
	}
	if a.login == nil {
		return c.Redirect(http.StatusSeeOther, "/ops/")
	}
	a.clearSession(c)
	return c.Redirect(http.StatusSeeOther, "/ops/login")
}
