package redislock

import (
	"context"
	"time"

	"github.com/leasegate/leasegate"
)

// What the external tests reach inside the engine. In production the
// Waiter runs a waiting acquire's tries with its ticket's lease, and the
// deployment kind sets the index's strategy (index.go).

// TryAsWaiter is one try of a waiting acquire: refused, it takes (or
// keeps) owner's place in the resource's line.
func (l *Locker) TryAsWaiter(ctx context.Context, resource, owner string, ttl time.Duration) (leasegate.AcquireResult, error) {
	return l.acquire(ctx, l.tenant, resource, owner, ttl, 0, TicketLease)
}

// Leave takes owner's ticket out of the resource's line.
func (l *Locker) Leave(ctx context.Context, resource, owner string) error {
	return l.leave(ctx, resource, owner)
}

// SecondStepIndex is l writing the lock index as on Redis Cluster: in a
// second step after a new grant, never in the scripts.
func SecondStepIndex(l *Locker) *Locker {
	c := *l
	c.secondStepIndex = true
	return &c
}
