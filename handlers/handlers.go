// Package handlers holds leasegate's Echo routes: each handler decodes,
// validates, calls the lock engine, and encodes. All HTTP error mapping is
// in one place, errorHandler.
package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/metrics"
	"github.com/leasegate/leasegate/redislock"
)

// Config holds the limits the HTTP layer enforces.
type Config struct {
	// MaxTTL bounds ttl_seconds (default 86400 s).
	MaxTTL time.Duration
	// MaxWait bounds wait_ms (default 30 s).
	MaxWait time.Duration
	// BodyLimit is the largest accepted request body (default 16 KiB).
	BodyLimit int64
	// RequestTimeout bounds each request's work against Redis (default 5 s),
	// not counting wait_ms.
	RequestTimeout time.Duration
	// MetricsPublic serves /metrics without a key (--metrics-auth=none).
	// Default false: /metrics needs an ops key when keys are configured.
	MetricsPublic bool
	// OpsSessionTTL is how long a login to the /ops/ page lasts (default
	// 8 h); see docs/abuse.md.
	OpsSessionTTL time.Duration
	// OpsSecureCookies marks the /ops/ page's cookies Secure even on plain
	// HTTP requests (a gateway behind a TLS-terminating proxy). Over TLS
	// they are always Secure.
	OpsSecureCookies bool
	// OpsSessionSecret, when set, is mixed into the MAC of /ops/ session
	// cookies, so that reading the key file (hashes only) is not enough to
	// forge a session. Every gateway behind one load balancer needs the
	// same value. Empty: sessions are keyed by the key's stored hash alone.
	OpsSessionSecret string
}

// DefaultConfig returns the contract's defaults.
func DefaultConfig() Config {
	return Config{
		MaxTTL:         86400 * time.Second,
		MaxWait:        30 * time.Second,
		BodyLimit:      16 << 10,
		RequestTimeout: 5 * time.Second,
		OpsSessionTTL:  DefaultOpsSessionTTL,
	}
}

// Deps are what the handlers call.
type Deps struct {
	Locks *redislock.Locker
	// Waiter runs acquires with wait_ms > 0. Nil gets a Waiter with no
	// subscription, which notices releases by polling (docs/waiting.md).
	Waiter *redislock.Waiter
	// Ready reports whether the backing store is reachable (for /readyz).
	Ready func(ctx context.Context) error
	Log   *zap.Logger
	// Metrics counts outcomes; nil gets a private registry.
	Metrics *metrics.Metrics
	// Auth authenticates every route but /healthz and /readyz; nil runs
	// open (development only: server refuses non-loopback addresses).
	Auth Authenticator
	// Abuse runs user locks and the ops review; nil leaves those routes out.
	Abuse *abuse.Service
	// IPExtractor decides the client IP (never trust X-Forwarded-For
	// unless configured). Default: the connection's remote address.
	IPExtractor echo.IPExtractor
}

// API is the set of routes and what they need.
type API struct {
	cfg  Config
	deps Deps
	log  *zap.Logger
	m    *metrics.Metrics
	// login is deps.Auth's KeyLogin, nil in open mode or when it has none.
	login KeyLogin
}

// New builds the Echo instance with every route, the request logger and
// the problem+json error handler.
func New(cfg Config, deps Deps) *echo.Echo {
	if deps.Log == nil {
		deps.Log = zap.NewNop()
	}
	if deps.Metrics == nil {
		deps.Metrics = metrics.NewForTest()
	}
	if deps.Waiter == nil {
		deps.Waiter = redislock.NewWaiter(nil, redislock.WaiterOptions{})
	}
	if deps.IPExtractor == nil {
		deps.IPExtractor = echo.ExtractIPDirect()
	}
	if cfg.OpsSessionTTL <= 0 {
		cfg.OpsSessionTTL = DefaultOpsSessionTTL
	}
	a := &API{cfg: cfg, deps: deps, log: deps.Log, m: deps.Metrics}
	a.login, _ = deps.Auth.(KeyLogin)
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.IPExtractor = deps.IPExtractor
	e.HTTPErrorHandler = errorHandler(deps.Log)
	e.Use(requestLogger(deps.Log, deps.Metrics))

	e.GET("/healthz", a.healthz)
	e.GET("/readyz", a.readyz)

	authn := openMode
	if deps.Auth != nil {
		authn = deps.Auth.Middleware()
	}
	// client: routes any key may use; ops: also needs the ops role.
	// (Per-route middleware, not e.Group: an Echo v4 group with middleware
	// registers catch-all routes that turn 405s into 404s.)
	client := []echo.MiddlewareFunc{authn, requireRole(RoleClient)}
	ops := []echo.MiddlewareFunc{authn, requireRole(RoleOps)}

	e.POST("/locks/:resource", a.acquire, client...)
	e.GET("/locks/:resource", a.status, client...)
	e.DELETE("/locks/:resource", a.release, client...)
	e.POST("/locks/:resource/renew", a.renew, client...)

	if deps.Abuse != nil {
		e.POST("/user-locks/:name/:user_id", a.userLockAttempt, client...)
		e.DELETE("/user-locks/:name/:user_id", a.userLockClear, client...)
		e.GET("/abuse/flagged", a.listFlagged, ops...)
		e.GET("/abuse/flagged/:user_id", a.getFlagged, ops...)
		e.DELETE("/abuse/flagged/:user_id", a.clearFlagged, ops...)
		e.POST("/abuse/bans/:user_id", a.ban, ops...)
		e.DELETE("/abuse/bans/:user_id", a.unban, ops...)
		a.registerOps(e, authn)
	}

	metricsMW := ops
	if cfg.MetricsPublic {
		metricsMW = nil
	}
	e.GET("/metrics", echo.WrapHandler(deps.Metrics.Handler()), metricsMW...)
	e.GET("/openapi.yaml", a.openapi, client...)
	return e
}

// TenantKey is the echo.Context key under which authentication stores the
// caller's tenant. Without authentication every caller is in tenant "".
const TenantKey = "leasegate.tenant"

// locker returns the lock engine scoped to the caller's tenant.
func (a *API) locker(c echo.Context) *redislock.Locker {
	t, _ := c.Get(TenantKey).(string)
	return a.deps.Locks.Tenant(t)
}

// opContext bounds the Redis work of one request.
func (a *API) opContext(c echo.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Request().Context(), a.cfg.RequestTimeout)
}

func (a *API) healthz(c echo.Context) error {
	return sendJSON(c, http.StatusOK, map[string]string{"status": "ok"})
}

func (a *API) readyz(c echo.Context) error {
	if a.deps.Ready == nil {
		return sendJSON(c, http.StatusOK, map[string]string{"status": "ok"})
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := a.deps.Ready(ctx); err != nil {
		a.log.Warn("readiness check failed", zap.Error(err))
		p := NewProblem(http.StatusServiceUnavailable, SlugUnavailable, "redis is not reachable")
		p.RetryAfter = defaultRetryAfterSecs
		return p
	}
	return sendJSON(c, http.StatusOK, map[string]string{"status": "ok"})
}
