// Package handlers holds leasegate's Echo routes: each handler decodes,
// validates, calls the lock engine, and encodes. All HTTP error mapping is
// in one place, errorHandler. The ops page, the HTML face of the same
// services, is package opsui; it registers its routes on the Echo
// instance New returns and reuses the exported helpers here
// (authentication, roles, error mapping, the routes' input rules).
package handlers

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
	"github.com/leasegate/leasegate/metrics"
)

// Config holds the limits the HTTP layer enforces.
type Config struct {
	// MaxTTL bounds ttl_seconds (default 86400 s).
	MaxTTL time.Duration
	// MaxWait bounds wait_ms (default 30 s).
	MaxWait time.Duration
	// DefaultLockDelay is the lock_delay_ms of an acquire that gives none
	// (--default-lock-delay, default 0; at most leasegate.MaxLockDelay).
	DefaultLockDelay time.Duration
	// BodyLimit is the largest accepted request body (default 16 KiB).
	BodyLimit int64
	// RequestTimeout bounds each request's work against Redis (default 5 s),
	// not counting wait_ms.
	RequestTimeout time.Duration
	// MetricsPublic serves /metrics without a key (--metrics-auth=none).
	// Default false: /metrics needs an ops key when keys are configured.
	MetricsPublic bool
	// OpsSecureCookies marks the /ops/ page's cookies Secure even on plain
	// HTTP requests (a gateway behind a TLS-terminating proxy). Over TLS
	// they are always Secure.
	OpsSecureCookies bool
	// EventsHeartbeat is how often an event stream sends a comment when
	// idle (default DefaultEventsHeartbeat).
	EventsHeartbeat time.Duration
}

// DefaultConfig returns the contract's defaults.
func DefaultConfig() Config {
	return Config{
		MaxTTL:         86400 * time.Second,
		MaxWait:        30 * time.Second,
		BodyLimit:      16 << 10,
		RequestTimeout: 5 * time.Second,
	}
}

// Deps are what the handlers call: the domain's services, and how to
// authenticate. The handlers know nothing of Redis.
type Deps struct {
	// Locks serves /locks (single calls and waiting acquires).
	Locks leasegate.LockService
	// LockSets serves POST and DELETE /locks (lock sets); nil leaves
	// them out.
	LockSets leasegate.LockSetService
	// UserLocks serves /user-locks; Flags the ops review (/abuse/..., and
	// opsui's /ops/).
	// Either nil leaves those routes out.
	UserLocks leasegate.UserLockService
	Flags     leasegate.FlagRegistry
	// Backtests serves POST /abuse/backtest; nil leaves it out.
	Backtests leasegate.PolicyBacktester
	// Semaphores serves /semaphores, Claims /claims; nil leaves them out.
	Semaphores leasegate.SemaphoreService
	Claims     leasegate.ClaimService
	// Elections serves /elections (and GET /locks?kind=elections); nil
	// leaves them out.
	Elections leasegate.ElectionService
	// Webhooks shows the webhook outbox and its dead letters
	// (GET /abuse/webhooks); nil: webhooks are not configured.
	Webhooks leasegate.WebhookInspector
	// Operator serves the listing, forced releases and lock events; Audit
	// the audit trail (operator.go). Nil leaves their routes out.
	Operator leasegate.LockOperator
	Audit    leasegate.AuditLog
	// Ready reports whether the backing store is reachable (for /readyz).
	Ready func(ctx context.Context) error
	Log   *zap.Logger
	// Metrics counts outcomes; nil gets a private registry.
	Metrics *metrics.Metrics
	// Auth authenticates every route but /healthz and /readyz; nil runs
	// open (development only: server refuses non-loopback addresses).
	Auth Authenticator
	// Tracer, when not nil, traces every request but the probes and
	// scrapes: a server span continuing the caller's traceparent, in the
	// request's context for the Redis calls' spans, its ids in the request
	// log line (tracing.go). Nil: tracing is off and costs nothing.
	Tracer trace.TracerProvider
	// IPExtractor decides the client IP (never trust X-Forwarded-For
	// unless configured). Default: the connection's remote address.
	IPExtractor echo.IPExtractor
	// TestClock moves the store's clock forward and returns the store's
	// time after the move: POST /ops/test-clock (ops role). Only a gateway
	// on the embedded store started for tests sets it; nil leaves the
	// route out.
	TestClock func(d time.Duration) (time.Time, error)
}

// Authn is the routes' authentication: Auth's middleware, or open mode
// without one.
func (d Deps) Authn() echo.MiddlewareFunc {
	if d.Auth != nil {
		return d.Auth.Middleware()
	}
	return openMode
}

// WithDefaults is d with a no-op Log, a private Metrics registry and the
// connection's address as the client IP where d leaves them nil.
func (d Deps) WithDefaults() Deps {
	if d.Log == nil {
		d.Log = zap.NewNop()
	}
	if d.Metrics == nil {
		d.Metrics = metrics.NewStandalone()
	}
	if d.IPExtractor == nil {
		d.IPExtractor = echo.ExtractIPDirect()
	}
	return d
}

// API is the set of routes and what they need.
type API struct {
	cfg  Config
	deps Deps
	log  *zap.Logger
	m    *metrics.Metrics
}

// New builds the Echo instance with every route, the request logger and
// the problem+json error handler.
func New(cfg Config, deps Deps) *echo.Echo {
	deps = deps.WithDefaults()
	a := &API{cfg: cfg, deps: deps, log: deps.Log, m: deps.Metrics}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.IPExtractor = deps.IPExtractor
	e.HTTPErrorHandler = errorHandler(deps.Log, deps.Metrics)
	if deps.Tracer != nil {
		e.Use(traceRequests(deps.Tracer, deps.Metrics))
	}
	e.Use(requestLogger(deps.Log, deps.Metrics, deps.Tracer != nil))

	e.GET("/healthz", a.healthz)
	e.GET("/readyz", a.readyz)

	authn := deps.Authn()
	// client: routes any key may use; ops: also needs the ops role.
	// (Per-route middleware, not e.Group: an Echo v4 group with middleware
	// registers catch-all routes that turn 405s into 404s.)
	client := []echo.MiddlewareFunc{authn, RequireRole(leasegate.RoleClient)}
	ops := []echo.MiddlewareFunc{authn, RequireRole(leasegate.RoleOps)}

	e.POST("/locks/:resource", Wrap(a.acquire, client...))
	e.GET("/locks/:resource", Wrap(a.status, client...))
	e.DELETE("/locks/:resource", Wrap(a.release, client...))
	e.POST("/locks/:resource/renew", Wrap(a.renew, client...))
	if deps.LockSets != nil {
		e.POST("/locks", Wrap(a.acquireSet, client...))
		e.DELETE("/locks", Wrap(a.releaseSet, client...))
	}
	a.registerOperator(e, client, ops)

	if deps.UserLocks != nil {
		e.POST("/user-locks/:name/:user_id", Wrap(a.userLockAttempt, client...))
		e.DELETE("/user-locks/:name/:user_id", Wrap(a.userLockClear, client...))
	}
	if deps.Semaphores != nil {
		e.POST("/semaphores/:name", Wrap(a.semAcquire, client...))
		e.GET("/semaphores/:name", Wrap(a.semStatus, client...))
		e.DELETE("/semaphores/:name", Wrap(a.semRelease, client...))
		e.POST("/semaphores/:name/renew", Wrap(a.semRenew, client...))
	}
	if deps.Claims != nil {
		e.POST("/claims/:scope/:key", Wrap(a.claimStart, client...))
		e.GET("/claims/:scope/:key", Wrap(a.claimGet, client...))
		e.DELETE("/claims/:scope/:key", Wrap(a.claimDelete, client...))
		e.POST("/claims/:scope/:key/complete", Wrap(a.claimComplete, client...))
	}
	a.registerElections(e, client)
	if deps.Flags != nil {
		e.GET("/abuse/flagged", Wrap(a.listFlagged, ops...))
		e.GET("/abuse/flagged/:user_id", Wrap(a.getFlagged, ops...))
		e.DELETE("/abuse/flagged/:user_id", Wrap(a.clearFlagged, ops...))
		e.POST("/abuse/bans/:user_id", Wrap(a.ban, ops...))
		e.DELETE("/abuse/bans/:user_id", Wrap(a.unban, ops...))
		e.GET("/abuse/webhooks", Wrap(a.webhookStatus, ops...))
	}
	if deps.Backtests != nil {
		e.POST("/abuse/backtest", Wrap(a.backtest, ops...))
	}

	metricsMW := ops
	if cfg.MetricsPublic {
		metricsMW = nil
	}
	e.GET("/metrics", Wrap(echo.WrapHandler(deps.Metrics.Handler()), metricsMW...))
	e.GET("/openapi.yaml", Wrap(a.openapi, client...))
	if deps.TestClock != nil {
		e.POST("/ops/test-clock", Wrap(a.advanceClock, ops...))
	}
	return e
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
		return a.healthz(c)
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := a.deps.Ready(ctx); err != nil {
		if !errors.Is(err, leasegate.ErrShuttingDown) { // the drain logged itself
			a.log.Warn("readiness check failed", zap.Error(err))
		}
		// A check that says why (an unavailable domain error) is passed
		// on whole, so that an expected refusal (the drain, a store known
		// down) is not logged again as a failed request; anything else is
		// a store that does not answer.
		var de *leasegate.Error
		if errors.As(err, &de) && de.Code == leasegate.CodeUnavailable {
			return err
		}
		return &leasegate.Error{Code: leasegate.CodeUnavailable, Message: "redis is not reachable",
			RetryAfter: leasegate.DefaultRetryAfter}
	}
	return a.healthz(c)
}

// openapi serves the OpenAPI 3.1 description of every route (api.Spec).
func (a *API) openapi(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", api.Spec)
}
