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
// of its Redis calls by the Locker's Config.OpTimeout itself.
type Service struct {
	locks     *Locker
	waiter    *Waiter
	opTimeout time.Duration
}

var _ leasegate.LockService = (*Service)(nil)

// NewService serves locks from l; waiting acquires go through w (nil: a
// Waiter without a subscription, which notices releases by polling).
func NewService(l *Locker, w *Waiter) *Service {
	if w == nil {
		w = NewWaiter(nil, WaiterOptions{})
	}
	return &Service{locks: l, waiter: w, opTimeout: l.cfg.OpTimeout}
}

// Acquire implements leasegate.LockService: a free or expired resource is
// granted with a new fencing token; the same owner re-acquiring keeps its
// token and moves the expiry; another owner's live lease is reported with
// Acquired false, after waiting up to req.Wait for it (Waiter.Acquire).
// Any Redis error returns ErrUnavailable and never a grant.
func (s *Service) Acquire(ctx context.Context, tenant string, req leasegate.AcquireRequest) (leasegate.AcquireResult, error) {
	if req.Wait > 0 {
		return s.waiter.Acquire(ctx, s.locks.Tenant(tenant), WaitRequest{
			Resource: req.Resource, Owner: req.Owner, TTL: req.TTL,
			LockDelay: req.LockDelay, Wait: req.Wait, OpTimeout: s.opTimeout,
		})
	}
	return s.locks.acquire(ctx, tenant, req.Resource, req.Owner, req.TTL, req.LockDelay, 0)
}

// Status implements leasegate.LockService: the live lease on resource,
// or leasegate.ErrLockNotHeld.
func (s *Service) Status(ctx context.Context, tenant, resource string) (leasegate.Lock, error) {
	return s.locks.status(ctx, tenant, resource)
}

// Renew implements leasegate.LockService: it moves the expiry of owner's
// live lease to now+ttl, keeping its token; token 0 means any token of
// owner. An expired lease is not renewed (leasegate.ErrLockNotHeld);
// another owner's, or another token, gives leasegate.ErrLockForbidden.
func (s *Service) Renew(ctx context.Context, tenant, resource, owner string, token int64, ttl time.Duration) (leasegate.Lock, error) {
	return s.locks.renew(ctx, tenant, resource, owner, token, ttl)
}

// Release implements leasegate.LockService: it ends owner's lease on
// resource; token 0 means any token of owner. The error is non-nil only
// when Redis failed (ErrUnavailable) or answered oddly.
func (s *Service) Release(ctx context.Context, tenant, resource, owner string, token int64) (leasegate.ReleaseResult, error) {
	return s.locks.release(ctx, tenant, resource, owner, token)
}

// Waiting is how many acquires wait on this gateway, and Queued how many
// wait for resource in tenant (for /metrics and listings).
func (s *Service) Waiting() int { return s.waiter.Waiting() }

// Queued is how many acquires on this gateway wait for resource in tenant.
func (s *Service) Queued(tenant, resource string) int {
	return s.waiter.Queued(s.locks.Tenant(tenant), resource)
}
