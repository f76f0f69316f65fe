package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// Role is what an API key may do.
type Role string

// Roles. RoleOps may do everything RoleClient may, and also the ops review
// routes and /ops/.
const (
	RoleClient Role = "client"
	RoleOps    Role = "ops"
)

// RoleKey is the echo.Context key under which authentication stores the
// caller's Role (TenantKey holds its tenant).
const RoleKey = "leasegate.role"

// OperatorKey is the echo.Context key under which authentication may store
// the name of the caller (an API key's name) for audit records. Without it
// the operator is OpenModeOperator.
const OperatorKey = "leasegate.operator"

// OpenModeOperator names the operator in audit records when no
// authentication named one (open mode). Client-sent headers such as
// X-Operator are not used: nothing vouches for them.
const OpenModeOperator = "open-mode"

// Operator returns who is acting, for audit records.
func Operator(c echo.Context) string {
	if op, ok := c.Get(OperatorKey).(string); ok && op != "" {
		return op
	}
	return OpenModeOperator
}

// Authenticator decides who a request is. It sets TenantKey and RoleKey on
// the context, or returns a 401 problem. Deps.Auth nil means open mode
// (development): every caller is an operator in tenant "".
type Authenticator interface {
	Middleware() echo.MiddlewareFunc
}

// openMode marks every request as an operator of the default tenant.
func openMode(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(TenantKey, "")
		c.Set(RoleKey, RoleOps)
		return next(c)
	}
}

// requireRole lets a request through only when authentication gave it
// role want (an ops key may do what a client key may). No role at all is
// refused: it never fails open.
func requireRole(want Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			got, _ := c.Get(RoleKey).(Role)
			if got == want || got == RoleOps {
				return next(c)
			}
			return NewProblem(http.StatusForbidden, SlugForbidden,
				"this API key's role may not use this route")
		}
	}
}

// Principal is an authenticated API key as the /ops/ page's login sees
// it. Secret is a per-key secret that keys the MAC of the key's session
// cookies; auth.Keyring gives the key's stored SHA-256, so removing or
// changing the key revokes its sessions on every gateway instance that
// shares the key file.
type Principal struct {
	Name   string
	Role   Role
	Tenant string
	Secret []byte
}

// KeyLogin is what the /ops/ page's browser login needs from the
// Authenticator (auth.Keyring implements both): checking a key pasted
// into the login form, and finding a key again by name to verify a
// session cookie. An Authenticator without it leaves the page to Bearer
// keys only.
type KeyLogin interface {
	CheckKey(presented string) (Principal, bool)
	KeyByName(name string) (Principal, bool)
}
