package server

import (
	"fmt"
	"os"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/claim"
	"github.com/leasegate/leasegate/election"
	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/semaphore"
)

// engines are the lock engines and the route dependencies built on them.
type engines struct {
	deps  handlers.Deps
	locks *redislock.Locker
}

// buildEngines builds the lock, lock set, semaphore, claim and election
// engines on s.rdb, the abuse service and the webhooks, and the route
// dependencies that use them.
func (s *Server) buildEngines(cfg Config, log *zap.Logger, ipx echo.IPExtractor) (_ *engines, err error) {
	// Releases are published on one channel; one subscription per
	// process wakes the waiting acquires (docs/waiting.md). On Redis
	// Cluster >= 7 they go to each resource's shard channel instead, and
	// the Waiter subscribes those it waits on (pubsub.go).
	releaseChannel := cfg.KeyPrefix + "released"
	shards := s.shardRouter()
	var scripter redis.Scripter = s.rdb
	if !cfg.NoAutoPipeline && cfg.Redis.MinReplicas == 0 {
		if s.batcher, err = redislock.NewBatcher(s.rdb, redislock.BatchOptions{Timeout: cfg.HTTP.RequestTimeout}); err != nil {
			s.closeRedis()
			return nil, fmt.Errorf("server: %w", err)
		}
		scripter = s.batcher
	}
	// One configuration for every engine: locks, lock sets, semaphores,
	// elections and claims.
	ecfg := redislock.Config{
		Prefix:          cfg.KeyPrefix,
		FenceRetention:  cfg.FenceRetention,
		ReleaseChannel:  releaseChannel,
		ShardedReleases: shards != nil,
		MinReplicas:     cfg.Redis.MinReplicas,
		ReplicaTimeout:  cfg.Redis.MinReplicasTimeout,
		OpTimeout:       cfg.HTTP.RequestTimeout,
		OnRelease:       func(_, resource string, held time.Duration) { s.metrics.ObserveRelease(resource, held) },
		OnIndexFailure:  s.metrics.LockIndexFailures.Inc,
	}
	locks := redislock.New(scripter, ecfg)
	wopts := redislock.WaiterOptions{
		Channel:    releaseChannel,
		Log:        log.Named("waiter"),
		MaxWaiters: cfg.MaxWaiters,
		OnMessage:  s.metrics.ReleaseMessage,
		OnShardChannels: func(n int) {
			s.metrics.ReleaseShardChannels.Set(float64(n))
		},
	}
	if shards != nil {
		wopts.Shards = shards
	}
	s.waiter = redislock.NewWaiter(s.rdb, wopts)
	s.wakeOnOutage.Store(s.waiter)
	abuseLog := cfg.AbuseLog
	if abuseLog == nil {
		abuseLog = os.Stdout
	}
	// One logger (one lock on the writer) for the abuse and claims lines,
	// so that the two never interleave within a line.
	abuseLogger := newAbuseLogger(abuseLog)
	abuseSvc := abuse.New(s.rdb, abuse.Options{
		Prefix:   cfg.KeyPrefix,
		Policies: cfg.AbusePolicies,
		Log:      abuseLogger,
		Metrics:  s.metrics,
		Outbox:   cfg.webhooksOn(),
	})
	if err := s.startWebhooks(); err != nil {
		s.closeRedis()
		return nil, err
	}
	lockSvc := redislock.NewService(locks, s.waiter)
	deps := handlers.Deps{
		Metrics:   s.metrics,
		Locks:     lockSvc,
		LockSets:  lockSvc,
		UserLocks: abuseSvc,
		Flags:     abuseSvc,
		Backtests: abuseSvc,
		Webhooks:  s.webhookInspector(),
		Ready:     s.ready,
		Log:       log,
		Tracer:    cfg.Tracing,

		IPExtractor: ipx,
	}
	// Semaphores wait on the locks' Waiter and release channel; forced
	// claim removals go to the abuse log (docs/claims.md).
	deps.Semaphores = semaphore.New(s.rdb, s.waiter, ecfg)
	deps.Claims = claim.New(s.rdb, claim.Options{Config: ecfg, Audit: abuseLogger.Named("claims")})
	// Elections are leases of the lock engine under their own keys: the
	// same scripts, Waiter and release channel (docs/elections.md).
	deps.Elections = election.New(s.rdb, scripter, s.waiter, election.Options{Config: ecfg})
	return &engines{deps: deps, locks: locks}, nil
}
