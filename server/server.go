// Package server wires leasegate together: the Redis connection (or the
// embedded in-memory Redis), the lock engine, the HTTP routes, and the
// http.Server with its timeouts and graceful shutdown. cmd/leasegate only
// parses flags into a Config and calls Run.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/audit"
	"github.com/leasegate/leasegate/auth"
	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/internal/storehealth"
	"github.com/leasegate/leasegate/metrics"
	"github.com/leasegate/leasegate/opsui"
	"github.com/leasegate/leasegate/redisconn"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/scripts"
	"github.com/leasegate/leasegate/webhook"
)

// Version is the build's version, set with -ldflags "-X github.com/leasegate/leasegate/server.Version=v1.2.3".
var Version = "dev"

// Config is everything `leasegate serve` can be told.
type Config struct {
	// Addr is the listen address (default 127.0.0.1:8080): host:port, or
	// unix:/path for a Unix domain socket (unixsocket.go).
	Addr string
	// AddrMode and AddrGroup, with a Unix socket (Addr unix:/path), set
	// the socket file's permission bits (octal, e.g. "0660") and group (a
	// name or a number); "" leaves what the umask and the process give.
	AddrMode, AddrGroup string
	// AddrFile, when set, is where Run writes the bound address and a
	// newline once the gateway serves, and removes it on stop: the
	// readiness contract of test fixtures (addrfile.go).
	AddrFile string
	// RedisURL is a redis:// or rediss:// URL. Empty: embedded in-memory
	// Redis, loopback only.
	RedisURL string
	// Redis: Sentinel, Cluster, credentials, TLS, min-replicas (package
	// redisconn).
	Redis redisconn.Config
	// EmbeddedRedisAddr is where the embedded Redis listens when RedisURL
	// and the other Redis settings are empty (default 127.0.0.1:0, a free
	// port); loopback only (redisconn/embedded.go).
	EmbeddedRedisAddr string
	// EmbeddedRedisTestClock lets tests move the embedded store's clock
	// (Server.AdvanceClock, POST /ops/test-clock; docs/testing.md). It is
	// refused with any real Redis.
	EmbeddedRedisTestClock bool
	// KeyPrefix starts every Redis key (default "lg:").
	KeyPrefix string
	// FenceRetention: how long a lock key outlives its last lease, as the fence.
	FenceRetention time.Duration
	// NoAutoPipeline turns off the batching of concurrent requests' script
	// calls into shared pipelines (redislock.Batcher). It is always off
	// with Redis.MinReplicas, whose WAIT needs the call's own connection.
	NoAutoPipeline bool

	HTTP handlers.Config

	// MaxWaiters caps the acquires (locks, lock sets, semaphores and
	// election campaigns: all share one redislock.Waiter) waiting at once
	// on this gateway; one more is answered 503 at once (docs/waiting.md).
	// 0: no cap.
	MaxWaiters int

	// OpsSessionTTL is how long a browser login to /ops/ lasts (default
	// auth.DefaultSessionTTL); OpsSessionSecret, when set, is mixed into
	// the sessions' MACs so that the key file alone cannot forge one
	// (docs/auth.md).
	OpsSessionTTL    time.Duration
	OpsSessionSecret string

	// AbusePolicies are the user-lock policies (docs/abuse.md); the zero
	// value means abuse.DefaultPolicies().
	AbusePolicies abuse.Policies
	// AbuseLog receives the abuse log (JSON lines); nil is os.Stdout.
	AbuseLog io.Writer
	// Webhooks: with URLs, abuse events go to the outbox and this gateway
	// delivers them (server/webhook.go, docs/abuse.md).
	Webhooks webhook.Config

	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	// DrainDelay is how long Run keeps serving once its ctx is done
	// (cmd/leasegate: on SIGINT or SIGTERM) with /readyz answering 503 and
	// every answer carrying Connection: close, so that load balancers take
	// the gateway out of rotation before it stops accepting
	// (docs/deployment.md); 0: none. StopDraining ends it early. A gateway
	// on the embedded store has no balancer in front and does not drain.
	DrainDelay time.Duration
	// StopDraining, once closed, ends the drain at once (cmd/leasegate
	// closes it on a second SIGINT or SIGTERM). Nil: the drain runs its
	// course.
	StopDraining <-chan struct{}
	// ReloadKeys: each value received reloads the API keys (ReloadKeys;
	// cmd/leasegate sends one on SIGHUP). Nil: only the method reloads.
	ReloadKeys <-chan struct{}
	// ShutdownTimeout bounds what follows the drain: finishing in-flight
	// requests once the gateway stops accepting.
	ShutdownTimeout time.Duration

	// APIKeysFile is a file of API key entries and APIKeys a
	// comma-separated list of more (docs/auth.md). Neither: open mode,
	// loopback only unless InsecureOpen.
	APIKeysFile  string
	APIKeys      string
	InsecureOpen bool
	// MetricsAuth is MetricsAuthOps (default) or MetricsAuthNone.
	MetricsAuth string
	// TrustedProxies are the CIDRs (or addresses) of reverse proxies whose
	// X-Forwarded-For is believed. Default none: the peer address.
	TrustedProxies []string

	// AuditRetention is how long audit records are kept (default
	// leasegate.DefaultAuditRetention). LockClasses are the resource
	// prefixes that label the contention metrics (docs/metrics.md).
	// IndexSweepInterval: how often the lock index is swept (server/operator.go).
	AuditRetention     time.Duration
	LockClasses        []string
	IndexSweepInterval time.Duration

	// Tracing, when not nil, traces each request (a span continuing the
	// caller's traceparent) and its Redis calls (children of it), and puts
	// the ids in the request log line (docs/observability.md). Nil, the
	// default: no instrumentation is installed at all. cmd/leasegate sets
	// it from the OTEL_* environment (package tracing).
	Tracing trace.TracerProvider
}

// DefaultMaxWaiters is the default --max-waiters: at the per-waiter cost
// measured in docs/benchmarks.md a few hundred MB of the gateway's memory.
const DefaultMaxWaiters = 10000

// DefaultDrainDelay is the default --drain-delay: it covers a health
// check that takes a gateway out after up to 10 s of failures (HAProxy's
// default inter 2s, fall 3; Kubernetes readiness with periodSeconds 5,
// failureThreshold 2), and the few seconds an endpoint removal takes to
// reach kube-proxy and ingress controllers.
const DefaultDrainDelay = 10 * time.Second

// MaxOpsSessionTTL bounds --ops-session-ttl: a stolen session cookie
// cannot outlive a week, and an operator logs in again at least weekly.
const MaxOpsSessionTTL = 7 * 24 * time.Hour

// MinOpsSessionSecret is the shortest --ops-session-secret accepted.
const MinOpsSessionSecret = 32

// DefaultConfig returns the documented defaults (docs/configuration.md).
func DefaultConfig() Config {
	return Config{
		Addr:              "127.0.0.1:8080",
		KeyPrefix:         "lg:",
		FenceRetention:    redislock.DefaultFenceRetention,
		Redis:             redisconn.Config{MinReplicasTimeout: redisconn.DefaultMinReplicasTimeout, OutageGrace: redisconn.DefaultOutageGrace},
		EmbeddedRedisAddr: redisconn.DefaultEmbeddedAddr,
		HTTP:              handlers.DefaultConfig(),
		OpsSessionTTL:     auth.DefaultSessionTTL,
		MaxWaiters:        DefaultMaxWaiters,
		AbusePolicies:     abuse.DefaultPolicies(),
		Webhooks:          webhook.Config{MaxAttempts: webhook.DefaultMaxAttempts, Timeout: webhook.DefaultTimeout},
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      45 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    16 << 10,
		DrainDelay:        DefaultDrainDelay,
		ShutdownTimeout:   30 * time.Second,
		MetricsAuth:       MetricsAuthOps,

		AuditRetention:     leasegate.DefaultAuditRetention,
		IndexSweepInterval: DefaultIndexSweepInterval,
	}
}

// Validate checks a config before anything starts.
func (c Config) Validate() error {
	var errs []error
	if c.HTTP.MaxTTL < time.Second {
		errs = append(errs, errors.New("max-ttl must be at least 1s"))
	}
	if c.HTTP.MaxWait < 0 {
		errs = append(errs, errors.New("max-wait must not be negative"))
	}
	if c.DrainDelay < 0 {
		errs = append(errs, errors.New("drain-delay must not be negative"))
	}
	if c.MaxWaiters < 0 {
		errs = append(errs, errors.New("max-waiters must not be negative"))
	}
	if c.HTTP.DefaultLockDelay < 0 || c.HTTP.DefaultLockDelay > leasegate.MaxLockDelay ||
		c.HTTP.DefaultLockDelay%time.Millisecond != 0 {
		errs = append(errs, fmt.Errorf("default-lock-delay must be whole milliseconds from 0 to %v", leasegate.MaxLockDelay))
	}
	if c.HTTP.BodyLimit < 1 {
		errs = append(errs, errors.New("body-limit must be positive"))
	}
	if c.HTTP.RequestTimeout <= 0 {
		errs = append(errs, errors.New("request-timeout must be positive"))
	}
	if err := c.AbusePolicies.Validate(); err != nil && !c.AbusePolicies.IsZero() {
		errs = append(errs, fmt.Errorf("abuse policies: %w", err))
	}
	if c.KeyPrefix == "" {
		errs = append(errs, errors.New("key-prefix must not be empty"))
	}
	if strings.ContainsAny(c.KeyPrefix, "{}") {
		// A brace in the prefix would take over the Redis Cluster hash tag
		// (one slot for every lock, or none: a lock and its waiters apart).
		errs = append(errs, fmt.Errorf("key-prefix %q must not contain '{' or '}': the hash tag is the gateway's (docs/keys.md)", c.KeyPrefix))
	}
	// A waiting acquire may answer one Redis call after wait_ms: a try in
	// flight when the wait ends is let finish (docs/waiting.md).
	if c.WriteTimeout > 0 && c.WriteTimeout <= c.HTTP.MaxWait+c.HTTP.RequestTimeout {
		errs = append(errs, fmt.Errorf("write-timeout (%v) must exceed max-wait (%v) plus request-timeout (%v), or waiting acquires are cut off", c.WriteTimeout, c.HTTP.MaxWait, c.HTTP.RequestTimeout))
	}
	// 0 (a Config not made by DefaultConfig) means the default.
	if ttl := c.OpsSessionTTL; ttl != 0 && (ttl < time.Minute || ttl > MaxOpsSessionTTL) {
		errs = append(errs, fmt.Errorf("ops-session-ttl must be from 1m to 168h, got %v", ttl))
	}
	if s := c.OpsSessionSecret; s != "" && len(s) < MinOpsSessionSecret {
		errs = append(errs, fmt.Errorf("ops-session-secret must be at least %d bytes, got %d", MinOpsSessionSecret, len(s)))
	}
	if c.MetricsAuth != MetricsAuthOps && c.MetricsAuth != MetricsAuthNone {
		errs = append(errs, fmt.Errorf("metrics-auth must be %q or %q, got %q", MetricsAuthOps, MetricsAuthNone, c.MetricsAuth))
	}
	if _, err := parseTrustedProxies(c.TrustedProxies); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.validateUnix()...)
	errs = append(errs, c.validateWebhooks()...)
	errs = append(errs, c.RedisOptions().Validate()...)
	return errors.Join(errs...)
}

// RedisOptions are the config's Redis settings, as package redisconn
// takes them.
func (c Config) RedisOptions() redisconn.Options {
	return redisconn.Options{URL: c.RedisURL, Redis: c.Redis, EmbeddedAddr: c.EmbeddedRedisAddr,
		TestClock: c.EmbeddedRedisTestClock, RequestTimeout: c.HTTP.RequestTimeout}
}

// Server is a running gateway.
type Server struct {
	cfg  Config
	log  *zap.Logger
	conn *redisconn.Conn
	rdb  redis.UniversalClient // conn.Client
	e    *echo.Echo
	http *http.Server
	ln   net.Listener

	metrics *metrics.Metrics
	// keyring is nil in open mode.
	keyring *auth.Keyring
	waiter  *redislock.Waiter
	hooks   *webhook.Deliverer
	batcher *redislock.Batcher
	// operator and audit serve the operator tools (operator.go).
	operator *redislock.Operator
	audit    *audit.Log

	// draining is set when Run's drain begins: /readyz answers 503 and
	// every answer carries Connection: close.
	draining atomic.Bool

	closeOnce sync.Once
	// wakeOnOutage is the Waiter to wake when a node goes down, once it
	// exists.
	wakeOnOutage atomic.Pointer[redislock.Waiter]
}

// New connects to Redis (or starts the embedded one), builds the routes and
// binds the listen address. Call Serve to accept requests.
func New(cfg Config, log *zap.Logger) (_ *Server, err error) {
	if log == nil {
		log = zap.NewNop()
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	cfg.HTTP.MetricsPublic = cfg.MetricsAuth == MetricsAuthNone
	s := &Server{cfg: cfg, log: log}
	if err := s.loadKeys(); err != nil {
		return nil, err
	}
	ipx, err := ipExtractor(cfg.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.metrics = metrics.New(prometheus.NewRegistry())
	bi := Build()
	s.metrics.BuildInfo.WithLabelValues(bi.Version, bi.Commit, bi.GoVersion).Set(1)
	// The cap is exported so the waiters alert is a ratio to it, whatever
	// each gateway is configured with (deploy/prometheus).
	s.metrics.MaxWaiters.Set(float64(cfg.MaxWaiters))
	// The one cleanup path: closeRedis closes whatever has been started.
	defer func() {
		if err != nil {
			s.closeRedis()
		}
	}()
	if err := s.connect(); err != nil {
		return nil, err
	}
	eng, err := s.buildEngines(cfg, log, ipx)
	if err != nil {
		return nil, err
	}
	s.routes(eng)
	if err := s.listen(); err != nil {
		return nil, err
	}
	return s, nil
}

// routes builds the HTTP routes and the ops page on the engines.
func (s *Server) routes(eng *engines) {
	cfg := s.cfg
	deps, locks := eng.deps, eng.locks
	s.wireOperator(&deps, locks)
	if cfg.EmbeddedRedisTestClock {
		deps.TestClock = s.AdvanceClock
	}
	// The ops page's browser login (nil: the page takes only what Auth
	// takes). A typed nil would not be nil in the interface.
	var sessions opsui.Sessions
	// Every series exists at 0, in open mode too: a fleet's dashboard reads them.
	for via, reasons := range auth.RefusalReasons {
		for _, r := range reasons {
			s.metrics.AuthRefusals.WithLabelValues(via, r)
		}
	}
	if s.keyring != nil {
		deps.Auth = s.keyring
		s.keyring.CountRefusals(func(via, reason string) {
			s.metrics.AuthRefusals.WithLabelValues(via, reason).Inc()
		})
		// Login failures and logouts live in Redis, shared by every gateway.
		sessions = auth.NewSessionsWith(s.keyring, auth.SessionOptions{
			TTL: cfg.OpsSessionTTL, Secret: cfg.OpsSessionSecret,
			Redis: s.rdb, Prefix: cfg.KeyPrefix,
		})
	}
	s.e = handlers.New(cfg.HTTP, deps)
	opsui.Register(s.e, cfg.HTTP, deps, sessions)
}

// listen binds the listen address and builds the http.Server on it.
func (s *Server) listen() error {
	cfg, log := s.cfg, s.log
	var ln net.Listener
	var err error
	if path, ok := unixPath(cfg.Addr); ok {
		ln, err = listenUnix(path, cfg.AddrMode, cfg.AddrGroup)
	} else {
		ln, err = net.Listen("tcp", cfg.Addr)
	}
	if err != nil {
		return fmt.Errorf("server: listen %s: %w", cfg.Addr, err)
	}
	s.ln = problemListener{ln}
	var handler http.Handler = s.e
	if s.keyring == nil && redisconn.IsLoopback(cfg.Addr) {
		handler = loopbackHostOnly(s.e, log)
	}
	handler = s.closeWhileDraining(handler)
	s.http = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
	return nil
}

// NewLogger is the gateway's one log format: a JSON object a line on w
// (zap escapes every user-supplied string), its time under "ts" in
// RFC 3339 with nanoseconds, at level (debug, info, warn, error). The
// request log, the abuse log and `leasegate bench`'s gateways all use it.
func NewLogger(w io.Writer, level string) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, err
	}
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "ts"
	enc.EncodeTime = zapcore.TimeEncoderOfLayout(time.RFC3339Nano)
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(zapcore.AddSync(w)), lvl)), nil
}

// newAbuseLogger is the abuse log: NewLogger at info, named "abuse".
func newAbuseLogger(w io.Writer) *zap.Logger {
	log, _ := NewLogger(w, "info") // a fixed, valid level
	return log.Named("abuse")
}

func (s *Server) connect() (err error) {
	opts := s.cfg.RedisOptions()
	if opts.Mode() == "embedded" && !isLocal(s.cfg.Addr) {
		return fmt.Errorf("%w: the embedded in-memory Redis is for development only and binds loopback only; %q is not a loopback address (set --redis-url for a real Redis)", ErrConfig, s.cfg.Addr)
	}
	s.conn, err = redisconn.Open(opts, redisconn.Hooks{
		Log: s.log, Metrics: s.metrics, Tracing: s.cfg.Tracing,
		OnChange: s.redisChanged, Calls: s.metrics.RedisHook(scripts.ByName()),
	})
	if err != nil {
		return err
	}
	s.rdb = s.conn.Client
	return nil
}

// redisChanged hears a Redis node's new state: it is exported as metrics,
// a node that goes down wakes every waiting acquire, so that each meets
// the outage at once, and one that comes back reopens the release
// subscriptions at once (docs/operations.md, "Redis is down").
func (s *Server) redisChanged(c storehealth.Change) {
	if c.Gone {
		s.metrics.RedisNodeGone(c.Node)
		return
	}
	s.metrics.RedisState(c.Node, c.Up, !c.New)
	w := s.wakeOnOutage.Load()
	switch {
	case w == nil || c.New:
	case c.Up:
		w.StoreBack()
	default:
		w.WakeAll()
	}
}

// shardRouter is the cluster client when releases are sharded, else nil
// (redisconn.Conn.ShardRouter).
func (s *Server) shardRouter() *redis.ClusterClient { return s.conn.ShardRouter() }

// AdvanceClock moves the embedded store's clock d ahead, as if d had
// passed: leases, lock delays, user-lock windows and bans end as they
// would have, then every waiting acquire retries at once. It returns the
// store's time after the move. It is refused (redisconn.ErrNoTestClock)
// unless the gateway runs the embedded store with
// Config.EmbeddedRedisTestClock. The gateway's own timers (a waiting
// acquire's wait_ms, request timeouts, webhook retries) keep the real
// clock.
func (s *Server) AdvanceClock(d time.Duration) (time.Time, error) {
	now, err := s.conn.AdvanceClock(d)
	if err == nil && s.waiter != nil {
		s.waiter.WakeAll()
	}
	return now, err
}

// Addr is the address the server listens on (useful with port 0):
// host:port, or unix:/path.
func (s *Server) Addr() string {
	if _, ok := unixPath(s.cfg.Addr); ok {
		return unixPrefix + s.ln.Addr().String()
	}
	return s.ln.Addr().String()
}

// Handler is the HTTP handler, for tests (the routes: without the
// loopback Host check open mode adds on a loopback address).
func (s *Server) Handler() http.Handler { return s.e }

// Redis is the client the server uses.
func (s *Server) Redis() redis.UniversalClient { return s.rdb }

// Serve accepts requests until Shutdown. It returns nil after a clean
// shutdown.
func (s *Server) Serve() error {
	s.log.Info("leasegate listening", zap.String("addr", s.Addr()))
	err := s.http.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown answers every waiting acquire 503 (leasegate.ErrShuttingDown,
// by closing the Waiter), ends the event streams with a reconnect event,
// stops accepting, lets in-flight requests finish (bounded by ctx), then
// closes Redis.
func (s *Server) Shutdown(ctx context.Context) error {
	s.waiter.Close()
	err := s.http.Shutdown(ctx)
	s.closeRedis()
	return err
}

func (s *Server) closeRedis() {
	s.closeOnce.Do(func() {
		if s.waiter != nil {
			s.waiter.Close()
		}
		if s.batcher != nil {
			s.batcher.Close()
		}
		if s.hooks != nil {
			s.hooks.Close()
		}
		if s.conn != nil {
			s.conn.Close()
		}
	})
}

// Run serves until ctx is done, then shuts down gracefully.
func Run(ctx context.Context, cfg Config, log *zap.Logger) error {
	if log == nil {
		log = zap.NewNop() // as New allows; Run logs too
	}
	s, err := New(cfg, log)
	if err != nil {
		return err
	}
	go s.reloadKeysOn(ctx, cfg.ReloadKeys)
	// Maintain's last Redis calls (its snapshot's removal) end before
	// Redis is closed, so a stop reads no closed connection as an outage.
	mctx, stopMaintain := context.WithCancel(ctx)
	maintained := make(chan struct{})
	go func() { defer close(maintained); s.Maintain(mctx) }()
	defer func() { stopMaintain(); <-maintained }()
	errc := make(chan error, 1)
	go func() { errc <- s.Serve() }()
	if cfg.AddrFile != "" {
		if err := writeAddrFile(cfg.AddrFile, s.Addr()); err != nil {
			stopMaintain()
			<-maintained
			_ = s.Shutdown(context.Background())
			return err
		}
		defer removeAddrFile(cfg.AddrFile, log)
	}
	select {
	case err := <-errc:
		stopMaintain()
		<-maintained
		s.closeRedis()
		return err
	case <-ctx.Done():
	}
	// The embedded store is loopback only and of this process alone: no
	// load balancer can be in front of it, so nothing waits for a drain.
	if s.conn.EmbeddedAddr() != "" {
		cfg.DrainDelay = 0
	}
	s.drain(cfg.DrainDelay)
	<-maintained
	log.Info("shutting down: finishing in-flight requests")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := s.Shutdown(sctx); err != nil {
		return fmt.Errorf("server: shutdown: %w", err)
	}
	if err := <-errc; err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}
