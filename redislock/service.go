package redislock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"
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
	if req.Wait > 0 {
		l := s.locks.Tenant(tenant)
		if l.opts.PublishOnlyToWaiters {
			return s.acquireRegistered(ctx, l, req)
		}
		return s.waiter.Acquire(ctx, l, WaitRequest{
			Resource: req.Resource, Owner: req.Owner, TTL: req.TTL,
			Wait: req.Wait, OpTimeout: s.opTimeout,
		})
	}
	return s.locks.acquire(ctx, tenant, req.Resource, req.Owner, req.TTL)
}

// acquireRegistered is a waiting acquire whose tries register it among
// the resource's waiters (Options.PublishOnlyToWaiters), so that releases
// publish a wake-up while it waits. No lost wake-up: the try that finds the
// lease held registers in the same script run, so a release either comes
// before it (and the try would have found the lock free) or after it, and
// publishes. The granting try takes the entry out; only a wait that ends
// without the lock (timed out, client gone, error) costs one more call.
func (s *Service) acquireRegistered(ctx context.Context, l *Locker, req leasegate.AcquireRequest) (leasegate.AcquireResult, error) {
	// The entry outlives the wait by a margin that covers the last try.
	rctx, reg := Register(ctx, newWaiterID(), req.Wait+2*s.opTimeout+time.Second)
	res, err := s.waiter.Acquire(rctx, l, WaitRequest{
		Resource: req.Resource, Owner: req.Owner, TTL: req.TTL,
		Wait: req.Wait, OpTimeout: s.opTimeout,
	})
	if reg.Registered() {
		// Even when the client has gone; if this fails, the entry runs
		// out with its key (only extra wake-ups until then).
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opTimeout)
		_ = l.Leave(uctx, req.Resource, reg)
		cancel()
	}
	return res, err
}

// Waiter ids: 12 random hex digits per process and a counter, unique
// across the fleet's gateways.
var (
	waiterIDPrefix = func() string {
		var b [6]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	waiterIDSeq atomic.Uint64
)

func newWaiterID() string {
	return waiterIDPrefix + strconv.FormatUint(waiterIDSeq.Add(1), 36)
}

// Status implements leasegate.LockService.
func (s *Service) Status(ctx context.Context, tenant, resource string) (leasegate.Lock, error) {
	return s.locks.status(ctx, tenant, resource)
}

// Renew implements leasegate.LockService.
func (s *Service) Renew(ctx context.Context, tenant, resource, owner string, token int64, ttl time.Duration) (leasegate.Lock, error) {
	return s.locks.renew(ctx, tenant, resource, owner, token, ttl)
}

// Release implements leasegate.LockService.
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
