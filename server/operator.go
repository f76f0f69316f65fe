package server

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/audit"
	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/keyspace"
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

// Maintain does the gateway's periodic work until ctx ends: it sweeps
// the lock indexes (at once, then every IndexSweepInterval: expiries and
// leasegate_locks_held are counted there) and samples and shares the ops
// page's activity charts (metrics.Activity.Share). Run runs it beside
// Serve; a program or test that calls Serve itself runs it too, or those
// figures stay empty.
func (s *Server) Maintain(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.sweepIndexes(ctx) })
	wg.Go(func() { s.metrics.Activity().Share(ctx, s.rdb, keyspace.Space{Prefix: s.cfg.KeyPrefix}) })
	wg.Wait()
}

// sweepIndexes sweeps the lock index of every tenant at start and then
// every interval until ctx ends (expiries are counted then, and the held
// locks; docs/operations.md, docs/metrics.md). The first sweep is at once
// so that leasegate_locks_held is there from the start.
func (s *Server) sweepIndexes(ctx context.Context) {
	every := s.cfg.IndexSweepInterval
	if every <= 0 {
		every = DefaultIndexSweepInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.sweepOnce(ctx, every)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweepOnce sweeps every tenant's index, each bounded by every, and sets
// leasegate_locks_held to the live leases they hold together; when a
// tenant's sweep fails the count is unknown and the gauge is left out
// of the scrapes until a sweep of every tenant succeeds again.
func (s *Server) sweepOnce(ctx context.Context, every time.Duration) {
	held, complete := 0, true
	for _, tenant := range s.tenants() {
		c, cancel := context.WithTimeout(ctx, every)
		r, err := s.operator.Sweep(c, tenant, 500)
		cancel()
		if err != nil {
			complete = false
			if ctx.Err() == nil {
				s.log.Warn("lock index sweep failed", zap.String("tenant", tenant), zap.Error(err))
			}
			continue
		}
		held += r.Held
		if r.Removed > 0 {
			s.log.Debug("lock index swept", zap.String("tenant", tenant), zap.Int("removed", r.Removed))
		}
	}
	if complete {
		s.metrics.LocksHeld.Set(float64(held))
	} else {
		s.metrics.LocksHeld.Forget()
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
