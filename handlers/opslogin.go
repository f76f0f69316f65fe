package handlers

import (
	"bytes"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/leasegate/leasegate"
	"go.uber.org/zap"
)

// The /ops/ page's browser login: the handlers move cookies and render
// the form; Deps.Sessions (auth.Sessions) checks keys and signs and opens
// the session values (see its doc for the design).

// sessionCookie names the ops page's session cookie.
const sessionCookie = "leasegate_ops_session"

// sessionKey marks, on the echo.Context, a request authenticated by the
// session cookie.
const sessionKey = "leasegate.ops_session"

// loginChallenge is the WWW-Authenticate of the login form's 401 (RFC
// 9110 wants one on every 401): a form-based scheme, after the "Cookie"
// scheme of draft-broyer-http-cookie-auth, that no browser answers with a
// password prompt.
const loginChallenge = `Cookie realm="leasegate ops", form-action="/ops/login", cookie-name="` + sessionCookie + `"`

// loginFailed is the one message a refused login shows, whatever the
// reason (unknown key, client key, malformed key).
const loginFailed = "That key was not accepted. Paste an API key with the ops role."

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
			if a.deps.Sessions == nil {
				return viaAPI(c)
			}
			if ck, err := c.Cookie(sessionCookie); err == nil {
				if p, ok := a.deps.Sessions.Open(ck.Value, time.Now()); ok {
					c.Set(leasegate.PrincipalKey, p)
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
	if a.deps.Sessions == nil {
		return c.Redirect(http.StatusSeeOther, "/ops/")
	}
	if ck, err := c.Cookie(sessionCookie); err == nil {
		if _, ok := a.deps.Sessions.Open(ck.Value, time.Now()); ok {
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
	if a.deps.Sessions == nil {
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
	now := time.Now()
	p, known, cookie, expires := a.deps.Sessions.Login(strings.TrimSpace(form.Get("key")), now)
	if !known {
		return refuse(http.StatusUnauthorized, "unknown")
	}
	if cookie == "" {
		return refuse(http.StatusForbidden, "role")
	}
	a.setSession(c, cookie, int(expires.Sub(now)/time.Second))
	// A new CSRF token for the new session.
	a.newCSRFToken(c)
	a.log.Info("ops page login",
		zap.String("request_id", requestID(c)),
		zap.String("operator", p.Actor()),
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
	if a.deps.Sessions == nil {
		return c.Redirect(http.StatusSeeOther, "/ops/")
	}
	a.clearSession(c)
	return c.Redirect(http.StatusSeeOther, "/ops/login")
}
