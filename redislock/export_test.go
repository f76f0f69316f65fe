package redislock

import (
	"context"
	"time"

	"github.com/leasegate/leasegate"
)

// What the external tests reach inside the engine. In production the
// Waiter makes a waiting acquire's registration and hands it to each try,
// and the deployment kind sets the index's strategy (index.go).

// Registration is a waiting acquire's entry among its resource's waiters.
type Registration = registration

// NewRegistration is a registration with id whose entry lives at least ttl.
func NewRegistration(id string, ttl time.Duration) *Registration {
	return &registration{id: id, ttl: ttl}
}

// Registered says whether the entry is in Redis.
func (r *registration) Registered() bool { return r.registered.Load() }

// TryAsWaiter is one try of a waiting acquire registered with r.
func (l *Locker) TryAsWaiter(ctx context.Context, resource, owner string, ttl time.Duration, r *Registration) (leasegate.AcquireResult, error) {
	return l.acquire(ctx, l.tenant, resource, owner, ttl, 0, r)
}

// Leave removes r's entry.
func (l *Locker) Leave(ctx context.Context, resource string, r *Registration) error {
	return l.leave(ctx, resource, r)
}

// SecondStepIndex is l writing the lock index as on Redis Cluster: in a
// second step after a new grant, never in the scripts.
func SecondStepIndex(l *Locker) *Locker {
	c := *l
	c.secondStepIndex = true
	return &c
}
