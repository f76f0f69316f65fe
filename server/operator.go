package server

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/audit"
	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/redislock"
)

// The operator tools (docs/operations.md): the lock listing and its index,
// forced releases, lock events, the audit trail and contention metrics.

// DefaultIndexSweepInterval is how often the lock index of each tenant is
// swept of the entries of leases that ended without a release.
const DefaultIndexSweepInterval = time.Minute

// wireOperator adds the operator services to deps and wraps the services
// whose operator actions the audit trail records.
func (s *Server) wireOperator(deps *handlers.Deps, locks *redislock.Locker) {
	s.audit = audit.New(s.rdb, audit.Options{Prefix: s.cfg.KeyPrefix, Retention: s.cfg.AuditRetention})
	rec := audit.Recorder{Log: s.audit, Errors: s.log.Named("audit")}
	s.operator = redislock.NewOperator(s.rdb, locks, s.waiter, redislock.OperatorOptions{
		OpTimeout: s.cfg.HTTP.RequestTimeout,
		OnExpired: func(_, resource string) { s.metrics.ObserveExpiry(resource) },
		// Forced releases are webhook events, as abuse's are.
		Outbox:       s.cfg.webhooksOn(),
		Log:          s.log.Named("operator"),
		OutboxFailed: s.metrics.WebhookOutboxFailed,
	})
	deps.Operator, deps.Flags, deps.Claims = rec.Wrap(s.operator, deps.Flags, deps.Claims)
	deps.Audit = s.audit
	s.metrics.SetLockClasses(s.cfg.LockClasses)
}

// tenants is every tenant the gateway serves: the keys' tenants, or ""
// in open mode.
func (s *Server) tenants() []string {
	if s.keyring == nil {
		return []string{""}
	}
	return s.keyring.Tenants()
}

// sweepIndexes sweeps the lock index of every tenant every interval until
// ctx ends (expiries are counted then; docs/operations.md).
func (s *Server) sweepIndexes(ctx context.Context) {
	every := s.cfg.IndexSweepInterval
	if every <= 0 {
		every = DefaultIndexSweepInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, tenant := range s.tenants() {
			c, cancel := context.WithTimeout(ctx, every)
			n, err := s.operator.Sweep(c, tenant, 500)
			cancel()
			if err != nil && ctx.Err() == nil {
				s.log.Warn("lock index sweep failed", zap.String("tenant", tenant), zap.Error(err))
			} else if n > 0 {
				s.log.Debug("lock index swept", zap.String("tenant", tenant), zap.Int("removed", n))
			}
		}
	}
}

// sampleActivity feeds the per-minute charts of the /ops/ Locks view
// (metrics.Activity) every 10 s until ctx ends.
func (s *Server) sampleActivity(ctx context.Context) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		s.metrics.Activity().Sample(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// auditKeyReload records a key reload in the audit trail of every tenant
// of the new keys.
func (s *Server) auditKeyReload(ctx context.Context) {
	for _, tenant := range s.tenants() {
		audit.Recorder{Log: s.audit, Errors: s.log.Named("audit")}.Record(ctx, tenant,
			leasegate.AuditKeyReload, "api-keys", "SIGHUP or ReloadKeys", nil, leasegate.RequestMeta{Operator: "signal"})
	}
}
