package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/server"
	"github.com/leasegate/leasegate/tracing"
)

// serveFlags binds every serve flag: most straight into cfg, the user-lock
// policy file and abuse log into the returned abuseFlags, which apply()
// turns into cfg's policies and log writer after parsing.
func serveFlags(fs *flag.FlagSet, cfg *server.Config, logLevel *string) *abuseFlags {
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address: host:port, or unix:/path for a Unix domain socket")
	fs.StringVar(&cfg.AddrMode, "addr-mode", cfg.AddrMode, "with --addr unix:/path, the socket file's permission bits in octal, e.g. 0660 (default: as the umask makes it)")
	fs.StringVar(&cfg.AddrGroup, "addr-group", cfg.AddrGroup, "with --addr unix:/path, the socket file's group, a name or a number (default: the process's)")
	fs.StringVar(&cfg.AddrFile, "addr-file", cfg.AddrFile, "file the bound address and a newline are written to (atomically) once the gateway serves; removed on stop (docs/testing.md)")
	fs.StringVar(&cfg.RedisURL, "redis-url", cfg.RedisURL, "redis:// or rediss:// URL; empty runs an embedded in-memory Redis (loopback only, development)")
	redisFlags(fs, &cfg.Redis)
	fs.StringVar(&cfg.EmbeddedRedisAddr, "embedded-redis-addr", cfg.EmbeddedRedisAddr, "where the embedded Redis listens when there is no --redis-url: a loopback host:port (port 0: a free one); the start log says how to reach it with redis-cli")
	fs.BoolVar(&cfg.EmbeddedRedisTestClock, "embedded-redis-test-clock", cfg.EmbeddedRedisTestClock, "for tests: let ops keys move the embedded store's clock forward (POST /ops/test-clock, docs/testing.md); refused with a real Redis")
	fs.StringVar(&cfg.KeyPrefix, "key-prefix", cfg.KeyPrefix, "prefix of every Redis key")
	fs.DurationVar(&cfg.FenceRetention, "fence-retention", cfg.FenceRetention, "how long a resource's lock key outlives its last lease, as its fence (docs/keys.md)")
	fs.BoolVar(&cfg.NoAutoPipeline, "no-auto-pipeline", cfg.NoAutoPipeline, "send each request's Redis script call on its own instead of batching concurrent ones into one pipeline")
	fs.DurationVar(&cfg.HTTP.MaxTTL, "max-ttl", cfg.HTTP.MaxTTL, "largest ttl_seconds accepted")
	fs.DurationVar(&cfg.HTTP.MaxWait, "max-wait", cfg.HTTP.MaxWait, "largest wait_ms accepted")
	fs.DurationVar(&cfg.HTTP.DefaultLockDelay, "default-lock-delay", cfg.HTTP.DefaultLockDelay, "lock delay of an acquire that gives no lock_delay_ms: after a lease expires, other owners wait this long (0..1m; docs/fencing.md)")
	fs.IntVar(&cfg.MaxWaiters, "max-waiters", cfg.MaxWaiters, "most acquires waiting at once on this gateway; one more is answered 503 (0: no cap)")
	fs.Int64Var(&cfg.HTTP.BodyLimit, "body-limit", cfg.HTTP.BodyLimit, "largest request body in bytes")
	fs.DurationVar(&cfg.HTTP.RequestTimeout, "request-timeout", cfg.HTTP.RequestTimeout, "bound on one request's Redis work (not counting wait_ms)")
	fs.DurationVar(&cfg.ReadHeaderTimeout, "read-header-timeout", cfg.ReadHeaderTimeout, "time allowed to read request headers")
	fs.DurationVar(&cfg.ReadTimeout, "read-timeout", cfg.ReadTimeout, "time allowed to read a whole request")
	fs.DurationVar(&cfg.WriteTimeout, "write-timeout", cfg.WriteTimeout, "time allowed to answer a request (must exceed max-wait plus request-timeout)")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", cfg.IdleTimeout, "keep-alive idle timeout")
	fs.IntVar(&cfg.MaxHeaderBytes, "max-header-bytes", cfg.MaxHeaderBytes, "largest request header block in bytes")
	fs.DurationVar(&cfg.DrainDelay, "drain-delay", cfg.DrainDelay, "on SIGTERM/SIGINT, how long /readyz answers 503 while calls are still served (with Connection: close) before the gateway stops accepting; cover the load balancer's health checks (docs/deployment.md); 0: none; a second signal ends it")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "after the drain, how long finishing in-flight requests may take")
	fs.StringVar(logLevel, "log-level", *logLevel, "debug, info, warn or error")
	authFlags(fs, cfg)
	webhookFlags(fs, cfg)
	operatorFlags(fs, cfg)
	af := &abuseFlags{}
	af.bind(fs)
	return af
}

// abuseFlags are the serve flags of user locks and the abuse log.
type abuseFlags struct {
	policyFile    string
	maxAttempts   int
	flagRetention time.Duration
	log           string
	// The attempt log's bounds per lock (docs/abuse.md).
	attemptLogRetention  time.Duration
	attemptLogMaxEntries int64
}

func (a *abuseFlags) bind(fs *flag.FlagSet) {
	a.maxAttempts = abuse.DefaultMaxAttempts
	a.flagRetention = abuse.DefaultFlagRetention
	a.log = "stdout"
	a.attemptLogRetention = abuse.DefaultAttemptLogRetention
	a.attemptLogMaxEntries = abuse.DefaultAttemptLogMaxEntries
	fs.DurationVar(&a.attemptLogRetention, "attempt-log-retention", a.attemptLogRetention, "how long the attempt log of each user lock keeps an attempt (for backtests)")
	fs.Int64Var(&a.attemptLogMaxEntries, "attempt-log-max-entries", a.attemptLogMaxEntries, "most attempts the log of one user lock keeps (about); 0 turns the attempt log off")
	fs.StringVar(&a.policyFile, "abuse-policy-file", "", "JSON file of user-lock policies (docs/abuse.md); it overrides the two flags below")
	fs.IntVar(&a.maxAttempts, "abuse-max-attempts", a.maxAttempts, "default max attempts per user-lock window before the user is flagged")
	fs.DurationVar(&a.flagRetention, "abuse-flag-retention", a.flagRetention, "how long a flag record is kept after its last flag")
	fs.StringVar(&a.log, "abuse-log", a.log, `where the abuse log goes: "stdout", "stderr" or a file path (appended, created 0600)`)
}

// apply loads the policies into cfg and opens the abuse log; close it
// when the server has stopped.
func (a *abuseFlags) apply(cfg *server.Config, stdout, stderr io.Writer) (closeLog func() error, err error) {
	pol := abuse.DefaultPolicies()
	pol.Default.MaxAttempts = a.maxAttempts
	pol.FlagRetention = a.flagRetention
	pol.AttemptLogRetention, pol.AttemptLogMaxEntries = a.attemptLogRetention, a.attemptLogMaxEntries
	if a.policyFile != "" {
		if pol, err = abuse.LoadPolicies(a.policyFile, pol); err != nil {
			return nil, usageError{fmt.Errorf("--abuse-policy-file: %w", err)}
		}
	} else if err := pol.Validate(); err != nil {
		return nil, usageError{fmt.Errorf("--abuse-max-attempts/--abuse-flag-retention/--attempt-log-*: %w", err)}
	}
	cfg.AbusePolicies = pol
	switch a.log {
	case "stdout", "":
		cfg.AbuseLog = stdout
	case "stderr":
		cfg.AbuseLog = stderr
	default:
		f, err := os.OpenFile(a.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, usageError{fmt.Errorf("--abuse-log: %w", err)}
		}
		cfg.AbuseLog = f
		return f.Close, nil
	}
	return func() error { return nil }, nil
}

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	cfg := server.DefaultConfig()
	level := "info"
	fs := flag.NewFlagSet("leasegate serve", flag.ContinueOnError)
	af := serveFlags(fs, &cfg, &level)
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("serve takes no arguments, got %q", fs.Args())}
	}
	closeAbuseLog, err := af.apply(&cfg, stdout, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = closeAbuseLog() }()
	log, err := newLogger(level, stdout)
	if err != nil {
		return usageError{err}
	}
	defer func() { _ = log.Sync() }()
	redis.SetLogger(goRedisLog{log.Named("go-redis")})
	// Tracing: by the standard OTEL_* variables, off without an OTLP
	// endpoint (docs/observability.md).
	// Not ctx: the provider outlives a cancelled serve until it is shut
	// down below, to send the last spans.
	tp, err := tracing.FromEnv(context.Background(), getenv, server.Build().Version)
	if errors.Is(err, tracing.ErrConfig) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	if tp != nil {
		cfg.Tracing = tp
		log.Info("tracing on: exporting spans over OTLP/HTTP", zap.String("sampler", tracing.SamplerDescription(getenv)))
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tp.Shutdown(sctx); err != nil {
				log.Warn("tracing: the last spans were not all sent", zap.Error(err))
			}
		}()
	}
	defer serveSignals(&cfg)()
	return server.Run(ctx, cfg, log)
}

// serveSignals turns the OS signals of a serving gateway into cfg's
// triggers (relaySignals) until the returned stop is called. Subscribed
// before the gateway serves, so a SIGHUP is never the default (fatal) one.
func serveSignals(cfg *server.Config) (stop func()) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	stopRelay := relaySignals(sigs, cfg)
	return func() {
		signal.Stop(sigs)
		stopRelay()
	}
}

// relaySignals sets cfg's triggers and feeds them from sigs: SIGHUP
// reloads the API keys; a second SIGINT or SIGTERM ends the drain that
// the first began (main cancels serve's ctx on it).
func relaySignals(sigs <-chan os.Signal, cfg *server.Config) (stop func()) {
	reload, stopDraining, done := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	cfg.ReloadKeys, cfg.StopDraining = reload, stopDraining
	go func() {
		stops := 0
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				if sig == syscall.SIGHUP {
					select {
					case reload <- struct{}{}:
					default: // a reload is pending: it reads the keys as they are now
					}
				} else if stops++; stops == 2 {
					close(stopDraining)
				}
			}
		}
	}()
	return func() { close(done) }
}

// goRedisLog takes go-redis's own log lines (a failed dial, a Sentinel
// switch) into the gateway's log at debug level: while Redis is down the
// gateway PINGs it every 25 ms, and go-redis would write a line to stderr
// for each failed dial. What an operator needs is logged at warn and info
// by the gateway itself (internal/storehealth).
type goRedisLog struct{ log *zap.Logger }

func (l goRedisLog) Printf(_ context.Context, format string, v ...any) {
	if ce := l.log.Check(zapcore.DebugLevel, ""); ce != nil {
		ce.Message = fmt.Sprintf(format, v...)
		ce.Write()
	}
}

// newLogger is server.NewLogger with --log-level's name in its error.
func newLogger(level string, w io.Writer) (*zap.Logger, error) {
	log, err := server.NewLogger(w, level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return log, nil
}
