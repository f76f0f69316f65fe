package opsui

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
	"github.com/leasegate/leasegate/handlers"
	"go.uber.org/zap"
)

// The /ops/ page's browser login: the handlers move cookies and render
// the form; Sessions (auth.Sessions) checks keys and signs and opens
// the session values (see its doc for the design).

// Sessions is the /ops/ page's browser login, which a browser needs
// because it cannot send "Authorization: Bearer". auth.Sessions
// implements it; the page only moves cookies and renders forms. Its
// errors are *leasegate.Error values; the page reads their code.
type Sessions interface {
	// Login checks a key pasted into the login form from client (the
	// request's address). For a known key of the ops role it returns the
	// value of a new session cookie and its expiry. Refusals:
	// CodeUnauthorized (not a key), CodeForbidden (a key whose role may
	// not use the page), CodeRateLimited with a RetryAfter (too many
	// failed logins from client or with that key), CodeUnavailable
	// (nothing was checked).
	Login(ctx context.Context, key, client string, now time.Time) (p leasegate.Principal, cookie string, expires time.Time, err error)
	// Open returns the principal of a session cookie value that is valid
	// at now and was not logged out; CodeUnavailable when that cannot be
	// told.
	Open(ctx context.Context, cookie string, now time.Time) (leasegate.Principal, error)
	// Logout ends the session of a cookie value on every gateway.
	Logout(ctx context.Context, cookie string, now time.Time) error
}

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

// loginLimited is the message of a rate-limited login (429).
const loginLimited = "Too many failed logins from this address or with this key. Try again in a few minutes."

// loginUnavailable is the message of a login that could not be checked
// (503): the gateway's store is unavailable, and it never lets a login
// through uncounted.
const loginUnavailable = "Logins cannot be checked right now (the gateway's store is unavailable). Try again shortly."

// logoutUnrecorded is shown when logout dropped the cookie but could not
// end the session on the gateways.
const logoutUnrecorded = "You are logged out in this browser, but the gateway could not record the logout (its store is unavailable): a copy of this session stays valid until it expires."

// secureCookies: the page's cookies are Secure over TLS, and always when
// configured (a gateway behind a TLS-terminating proxy).
func (a *UI) secureCookies(c echo.Context) bool {
	return a.cfg.OpsSecureCookies || c.IsTLS()
}

func (a *UI) setSession(c echo.Context, value string, maxAge int) {
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
func (a *UI) clearSession(c echo.Context) { a.setSession(c, "", -1) }

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
func (a *UI) pageAuth(authn echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		viaAPI := authn(next)
		return func(c echo.Context) error {
			if a.sessions == nil {
				return viaAPI(c)
			}
			if ck, err := c.Cookie(sessionCookie); err == nil {
				p, err := a.openSession(c, ck.Value)
				if err == nil {
					c.Set(api.PrincipalKey, p)
					c.Set(sessionKey, true)
					return next(c)
				}
				if e, _ := leasegate.ErrorOf(err); e.Code == leasegate.CodeUnavailable {
					// Keep the cookie: the session may well be valid.
					return err
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

// openSession opens a session cookie value within the operation timeout.
func (a *UI) openSession(c echo.Context, value string) (leasegate.Principal, error) {
	ctx, cancel := a.opContext(c)
	defer cancel()
	return a.sessions.Open(ctx, value, time.Now())
}

type loginView struct {
	CSRF  string
	Error string
}

// renderLogin answers with the login form.
func (a *UI) renderLogin(c echo.Context, status int, errText string) error {
	return render(c, status, loginPage, "login.html", loginView{CSRF: a.csrfToken(c), Error: errText})
}

// loginForm is GET /ops/login. In open mode, and for a browser already
// logged in, it goes straight to the page.
func (a *UI) loginForm(c echo.Context) error {
	if a.sessions == nil {
		return c.Redirect(http.StatusSeeOther, "/ops/")
	}
	if ck, err := c.Cookie(sessionCookie); err == nil {
		_, err := a.openSession(c, ck.Value)
		if err == nil {
			return c.Redirect(http.StatusSeeOther, "/ops/")
		}
		if e, _ := leasegate.ErrorOf(err); e.Code != leasegate.CodeUnavailable {
			a.clearSession(c)
		}
	}
	return a.renderLogin(c, http.StatusOK, "")
}

// loginSubmit is POST /ops/login: an ops key gets a session and goes to
// the page (303); any other key gets the form again with one message,
// 401 (not a key) or 403 (a key whose role may not use the page), and no
// cookie. Too many failures from the client's address, or with a key
// refused for its role, get 429 with Retry-After (the key is then not
// checked); a login that cannot be counted gets 503 (docs/abuse.md).
func (a *UI) loginSubmit(c echo.Context) error {
	form, err := a.pageForm(c)
	if err != nil {
		return err
	}
	if a.sessions == nil {
		return c.Redirect(http.StatusSeeOther, "/ops/")
	}
	now := time.Now()
	ctx, cancel := a.opContext(c)
	defer cancel()
	p, cookie, expires, err := a.sessions.Login(ctx, strings.TrimSpace(form.Get("key")), c.RealIP(), now)
	if err != nil {
		e, _ := leasegate.ErrorOf(err)
		status, msg, reason := http.StatusUnauthorized, loginFailed, "unknown"
		switch e.Code {
		case leasegate.CodeUnauthorized:
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, loginChallenge)
		case leasegate.CodeForbidden:
			status, reason = http.StatusForbidden, "role"
		case leasegate.CodeRateLimited:
			status, msg, reason = http.StatusTooManyRequests, loginLimited, "rate_limited"
		case leasegate.CodeUnavailable:
			status, msg, reason = http.StatusServiceUnavailable, loginUnavailable, "unavailable"
		default:
			return err
		}
		if e.RetryAfter > 0 {
			c.Response().Header().Set("Retry-After", strconv.Itoa(handlers.RetryAfterSeconds(e)))
		}
		a.log.Info("ops page login refused",
			zap.String("request_id", handlers.RequestID(c)),
			zap.String("reason", reason),
			zap.String("key_name", p.KeyName),
			zap.String("remote_ip", c.RealIP()))
		return a.renderLogin(c, status, msg)
	}
	a.setSession(c, cookie, int(expires.Sub(now)/time.Second))
	// A new CSRF token for the new session.
	a.newCSRFToken(c)
	a.log.Info("ops page login",
		zap.String("request_id", handlers.RequestID(c)),
		zap.String("operator", p.Actor()),
		zap.String("tenant", p.Tenant),
		zap.String("remote_ip", c.RealIP()))
	return c.Redirect(http.StatusSeeOther, "/ops/")
}

// logout is POST /ops/logout: ends the session on every gateway (a copy
// of the cookie is refused from then on), drops the cookie and shows the
// login form. When the end cannot be recorded the cookie is dropped all
// the same and the form says so (503).
func (a *UI) logout(c echo.Context) error {
	if _, err := a.pageForm(c); err != nil {
		return err
	}
	if a.sessions == nil {
		return c.Redirect(http.StatusSeeOther, "/ops/")
	}
	a.clearSession(c)
	if ck, err := c.Cookie(sessionCookie); err == nil {
		ctx, cancel := a.opContext(c)
		defer cancel()
		if err := a.sessions.Logout(ctx, ck.Value, time.Now()); err != nil {
			if e, _ := leasegate.ErrorOf(err); e.RetryAfter > 0 {
				c.Response().Header().Set("Retry-After", strconv.Itoa(handlers.RetryAfterSeconds(e)))
			}
			a.log.Warn("ops page logout not recorded", zap.String("request_id", handlers.RequestID(c)), zap.Error(err))
			return a.renderLogin(c, http.StatusServiceUnavailable, logoutUnrecorded)
		}
	}
	return c.Redirect(http.StatusSeeOther, "/ops/login")
}
