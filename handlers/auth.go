package handlers

import (
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
			return leasegate.NewError(leasegate.CodeForbidden, "this API key's role may not use this route")
		}
	}
}

// RequestMeta is what audit and abuse records say about this request.
func RequestMeta(c echo.Context) leasegate.RequestMeta {
	return leasegate.RequestMeta{ClientIP: c.RealIP(), RequestID: RequestID(c), Operator: Principal(c).Actor()}
}
