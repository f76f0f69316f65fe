package redislock

import (
	"context"
	"time"

	"github.com/leasegate/leasegate"
)

// Service is the lock engine as the domain's leasegate.LockService: a
// Locker for single calls and a Waiter for acquires with a wait. A single
// call is bounded by the caller's ctx (the handlers give it the request
// timeout); a wait may last longer than any one call, so it bounds each
// of its Redis calls by opTimeout itself.
type Service struct {
	locks     *Locker
	waiter    *Waiter
	opTimeout time.Duration
}

var _ leasegate.LockService = (*Service)(nil)

// NewService serves locks from l; waiting acquires go through w (nil: a
// Waiter without a subscription, which notices releases by polling).
// opTimeout bounds each Redis call (0: DefaultOpTimeout).
func NewService(l *Locker, w *Waiter, opTimeout time.Duration) *Service {
	if w == nil {
		w = NewWaiter(nil, WaiterOptions{})
	}
	if opTimeout <= 0 {
		opTimeout = DefaultOpTimeout
	}
	return &Service{locks: l, waiter: w, opTimeout: opTimeout}
}

// Acquire implements leasegate.LockService.
func (s *Service) Acquire(ctx context.Context, tenant string, req leasegate.AcquireRequest) (leasegate.AcquireResult, error) {
	l := s.locks.Tenant(tenant)
	if req.Wait > 0 {
		if l.opts.PublishOnlyToWaiters {
			return s.acquireRegistered(ctx, l, req)
		}
		return s.waiter.Acquire(ctx, l, WaitRequest{
			Resource: req.Resource, Owner: req.Owner, TTL: req.TTL,
			Wait: req.Wait, OpTimeout: s.opTimeout,
		})
	}
	return l.Acquire(ctx, req.Resource, req.Owner, req.TTL)
}

// acquireRegistered is a waiting acquire that first registers its interest
// in Redis, so that releases of the resource publish a wake-up while it
// waits (Options.PublishOnlyToWaiters). No lost wake-up: the registration
// is done before the Waiter's first try, so a release either comes before
// that try (which then finds the lock free) or sees the count and
// publishes. A failed registration is a 503, like any Redis error.
func (s *Service) acquireRegistered(ctx context.Context, l *Locker, req leasegate.AcquireRequest) (leasegate.AcquireResult, error) {
	// The count outlives the wait by a margin that covers the last try.
	ttl := req.Wait + 2*s.opTimeout + time.Second
	rctx, cancel := context.WithTimeout(ctx, s.opTimeout)
	err := l.Interest(rctx, req.Resource, 1, ttl)
	cancel()
	if err != nil {
		return leasegate.AcquireResult{}, err
	}
	defer func() {
		// Even when the client has gone; if this fails the count runs out
		// by its TTL (only extra wake-ups until then).
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opTimeout)
		_ = l.Interest(uctx, req.Resource, -1, ttl)
		cancel()
	}()
	return s.waiter.Acquire(ctx, l, WaitRequest{
		Resource: req.Resource, Owner: req.Owner, TTL: req.TTL,
		Wait: req.Wait, OpTimeout: s.opTimeout,
	})
}

// Status implements leasegate.LockService.
func (s *Service) Status(ctx context.Context, tenant, resource string) (leasegate.Lock, error) {
	return s.locks.Tenant(tenant).Status(ctx, resource)
}

// Renew implements leasegate.LockService.
func (s *Service) Renew(ctx context.Context, tenant, resource, owner string, token int64, ttl time.Duration) (leasegate.Lock, error) {
	return s.locks.Tenant(tenant).Renew(ctx, resource, owner, token, ttl)
}

// Release implements leasegate.LockService.
func (s *Service) Release(ctx context.Context, tenant, resource, owner string, token int64) (leasegate.ReleaseResult, error) {
	return s.locks.Tenant(tenant).Release(ctx, resource, owner, token)
}

// Waiting is how many acquires wait on this gateway, and Queued how many
// wait for resource in tenant (for /metrics and listings).
func (s *Service) Waiting() int { return s.waiter.Waiting() }

// Queued is how many acquires on this gateway wait for resource in tenant.
func (s *Service) Queued(tenant, resource string) int {
	return s.waiter.Queued(s.locks.Tenant(tenant), resource)
}
