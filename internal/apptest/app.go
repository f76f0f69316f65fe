package apptest

import (
	"cmp"
	"context"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/leasegate/leasegate"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/api"
	"github.com/leasegate/leasegate/audit"
	"github.com/leasegate/leasegate/auth"
	"github.com/leasegate/leasegate/claim"
	"github.com/leasegate/leasegate/election"
	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/internal/logtest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/metrics"
	"github.com/leasegate/leasegate/opsui"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/semaphore"
)

// Options say which parts of the gateway an App has. The zero value is
// the lock routes in open mode with handlers.DefaultConfig().
type Options struct {
	// Config replaces handlers.DefaultConfig().
	Config *handlers.Config
	// Prefix starts every key of the lock engine and the abuse service
	// (default: each package's own default).
	Prefix string
	// UserLocks wires an abuse.Service as UserLocks and Flags (the
	// /user-locks routes, the review and /ops/), with Policies (zero:
	// abuse.DefaultPolicies()) and its log in App.AbuseLog.
	UserLocks bool
	Policies  abuse.Policies
	// Wait subscribes a redislock.Waiter to the release channel, for
	// waiting acquires; NewApp returns once the subscription is active.
	Wait bool
	// Keys are key-file entries ("name:role:tenant:hash"): the app
	// authenticates with an auth.Keyring of them (App.Ring).
	Keys []string
	// Sessions (with Keys) lets operators log in to /ops/:
	// auth.NewSessions(ring, SessionTTL, SessionSecret).
	Sessions      bool
	SessionTTL    time.Duration
	SessionSecret string
	// HeaderAuth authenticates by the X-Test-* headers (HeaderAuth).
	HeaderAuth bool
	// Primitives wires a semaphore.Service and an election.Service (on
	// the app's Waiter, if any) and a claim.Service: the /semaphores,
	// /elections and /claims routes.
	Primitives bool
	// WatchPoll is how often lock event watchers re-read the lease
	// (default 20 ms, so tests see acquires and renewals at once).
	WatchPoll time.Duration
	// Locks replaces the lock service built on the backend (a service on
	// a Scripter that misbehaves, say). The backend may then be nil.
	Locks leasegate.LockService
}

// App is the gateway's Echo app with what it is built on.
type App struct {
	E       *echo.Echo
	Backend *redistest.Backend
	// Locks is the lock service of the routes; Locker its engine (nil
	// when Options.Locks replaced it).
	Locks  leasegate.LockService
	Locker *redislock.Locker
	// Waiter is nil unless Options.Wait.
	Waiter *redislock.Waiter
	// Abuse is nil unless Options.UserLocks.
	Abuse *abuse.Service
	// Semaphores and Claims are nil unless Options.Primitives.
	Semaphores *semaphore.Service
	Claims     *claim.Service
	Elections  *election.Service
	// Operator and Audit serve the operator tools (nil when Options.Locks
	// replaced the lock service).
	Operator *redislock.Operator
	Audit    *audit.Log
	// Ring is nil unless Options.Keys.
	Ring    *auth.Keyring
	Metrics *metrics.Metrics
	// Log is the request log (debug and up); AbuseLog the abuse log.
	Log      *logtest.Buffer
	AbuseLog *logtest.Buffer
	opts     Options
}

// NewApp wires the services of o on b and builds the routes with
// handlers.New.
func NewApp(t testing.TB, b *redistest.Backend, o Options) *App {
	t.Helper()
	a := &App{Backend: b, Metrics: metrics.NewStandalone(), Log: &logtest.Buffer{}, AbuseLog: &logtest.Buffer{}, opts: o}
	if len(o.Keys) > 0 {
		a.Ring = Keyring(t, o.Keys...)
	}
	// The engines share one configuration, as the server's do.
	cfg := redislock.Config{Prefix: o.Prefix}
	if o.Wait {
		cfg.ReleaseChannel = o.Prefix + "released"
	}
	a.Locks = o.Locks
	if a.Locks == nil {
		a.Locker = redislock.New(b.RDB, cfg)
		if o.Wait {
			a.Waiter = redislock.NewWaiter(b.RDB, redislock.WaiterOptions{Channel: cfg.ReleaseChannel, PollInterval: time.Hour})
			t.Cleanup(a.Waiter.Close)
		}
		a.Locks = redislock.NewService(a.Locker, a.Waiter)
		a.Operator = redislock.NewOperator(b.RDB, a.Locker, a.Waiter, redislock.OperatorOptions{
			WatchPoll: cmp.Or(o.WatchPoll, 20*time.Millisecond),
			OnExpired: func(_, resource string) { a.Metrics.ObserveExpiry(resource) },
		})
		a.Audit = audit.New(b.RDB, audit.Options{Prefix: o.Prefix})
	}
	if o.UserLocks {
		a.Abuse = abuse.New(b.RDB, abuse.Options{Prefix: o.Prefix, Policies: o.Policies, Log: logger(a.AbuseLog, zapcore.InfoLevel)})
	}
	if o.Primitives {
		a.Semaphores = semaphore.New(b.RDB, a.Waiter, cfg)
		a.Claims = claim.New(b.RDB, claim.Options{Config: cfg})
		a.Elections = election.New(b.RDB, nil, a.Waiter, election.Options{Config: cfg, WatchPoll: cmp.Or(o.WatchPoll, 20*time.Millisecond)})
	}
	a.E = a.Instance(t, a.Ring, nil)
	if a.Waiter != nil {
		WaitFor(t, "the release subscription is active", a.Waiter.Active)
	}
	return a
}

// Instance builds another Echo app on the app's services (a second
// gateway behind the same load balancer, or one whose keys were
// reloaded) with ring as its keyring (nil: open mode, or HeaderAuth) and
// the app's Options changed by edit (nil: unchanged; only Config,
// Sessions, SessionTTL, SessionSecret and HeaderAuth matter here).
func (a *App) Instance(t testing.TB, ring *auth.Keyring, edit func(*Options)) *echo.Echo {
	t.Helper()
	o := a.opts
	if edit != nil {
		edit(&o)
	}
	cfg := handlers.DefaultConfig()
	if o.Config != nil {
		cfg = *o.Config
	}
	d := handlers.Deps{
		Locks:   a.Locks,
		Log:     logger(a.Log, zapcore.DebugLevel),
		Metrics: a.Metrics,
	}
	if sets, ok := a.Locks.(leasegate.LockSetService); ok {
		d.LockSets = sets
	}
	if a.Backend != nil {
		rdb := a.Backend.RDB
		d.Ready = func(ctx context.Context) error { return rdb.Ping(ctx).Err() }
	}
	if a.Abuse != nil {
		d.UserLocks, d.Flags, d.Backtests = a.Abuse, a.Abuse, a.Abuse
	}
	if a.Semaphores != nil {
		d.Semaphores, d.Claims, d.Elections = a.Semaphores, a.Claims, a.Elections
	}
	if a.Operator != nil {
		rec := audit.Recorder{Log: a.Audit, Errors: d.Log}
		d.Operator, d.Flags, d.Claims = rec.Wrap(a.Operator, d.Flags, d.Claims)
		d.Audit = a.Audit
	}
	var sessions opsui.Sessions
	switch {
	case ring != nil:
		d.Auth = ring
		if o.Sessions {
			sessions = auth.NewSessions(ring, o.SessionTTL, o.SessionSecret)
		}
	case o.HeaderAuth:
		d.Auth = HeaderAuth{}
	}
	e := handlers.New(cfg, d)
	opsui.Register(e, cfg, d, sessions)
	return e
}

// Keys parses key-file entries ("name:role:tenant:hash").
func Keys(t testing.TB, entries ...string) []auth.Key {
	t.Helper()
	var keys []auth.Key
	for _, e := range entries {
		k, err := auth.ParseEntry(e)
		if err != nil {
			t.Fatalf("parsing %q: %v", e, err)
		}
		keys = append(keys, k)
	}
	return keys
}

// Keyring is an auth.Keyring of key-file entries.
func Keyring(t testing.TB, entries ...string) *auth.Keyring {
	t.Helper()
	ring, err := auth.New(Keys(t, entries...), nil)
	if err != nil {
		t.Fatalf("auth.New: %v", err)
	}
	return ring
}

// HeaderAuth is a test Authenticator: X-Test-Tenant, X-Test-Role (default
// ops) and X-Test-Operator say who the caller is.
type HeaderAuth struct{}

// Middleware sets the Principal from the X-Test-* headers.
func (HeaderAuth) Middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Request().Header
			p := leasegate.Principal{Tenant: h.Get("X-Test-Tenant"), Role: leasegate.Role(h.Get("X-Test-Role")),
				KeyName: h.Get("X-Test-Operator")}
			if p.Role == "" {
				p.Role = leasegate.RoleOps
			}
			c.Set(api.PrincipalKey, p)
			return next(c)
		}
	}
}

func logger(w zapcore.WriteSyncer, level zapcore.Level) *zap.Logger {
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), w, level))
}

// WaitFor polls cond until it holds; the bound (10 s) only guards
// against a hang, it is not what the test measures.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	redistest.Eventually(t, 10*time.Second, what, cond)
}
