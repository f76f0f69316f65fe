package handlers

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
)

// Authenticator decides who a request is: its middleware stores the
// caller's leasegate.Principal under api.PrincipalKey, or returns
// an unauthorized error. Deps.Auth nil means open mode (development):
// every caller is leasegate.OpenMode.
type Authenticator interface {
	Middleware() echo.MiddlewareFunc
}

// Sessions is the /ops/ page's browser login, which a browser needs
// because it cannot send "Authorization: Bearer". auth.Sessions
// implements it; the handlers only move cookies and render forms. Its
// errors are *leasegate.Error values; the handlers read their code.
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

// openModePrincipal is leasegate.OpenMode in an interface once, so that
// storing it in a request's context does not box it anew every time.
var openModePrincipal any = leasegate.OpenMode

// openMode marks every request as an operator of the default tenant.
func openMode(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(api.PrincipalKey, openModePrincipal)
		return next(c)
	}
}

// Principal is the caller, as authentication stored it (the zero
// Principal, which may do nothing, when none did).
func Principal(c echo.Context) leasegate.Principal {
	p, _ := c.Get(api.PrincipalKey).(leasegate.Principal)
	return p
}

// tenantOf is the caller's tenant.
func tenantOf(c echo.Context) string { return Principal(c).Tenant }

// RequireRole lets a request through only when authentication gave it
// role want (an ops key may do what a client key may). No role at all is
// refused: it never fails open.
func RequireRole(want leasegate.Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if Principal(c).Role.Allows(want) {
				return next(c)
			}
			return problem(leasegate.CodeForbidden, "this API key's role may not use this route")
		}
	}
}

// RequestMeta is what audit and abuse records say about this request.
func RequestMeta(c echo.Context) leasegate.RequestMeta {
	return leasegate.RequestMeta{ClientIP: c.RealIP(), RequestID: RequestID(c), Operator: Principal(c).Actor()}
}
