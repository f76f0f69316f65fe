package leasegate

import (
	"context"
	"time"
)

// MaxLockSet is the most resources one lock set may name.
const MaxLockSet = 64

// LockSetRequest asks for the leases on every one of Resources for Owner,
// all or none (docs/lock-sets.md). Resources are distinct.
type LockSetRequest struct {
	Resources []string
	Owner     string
	TTL       time.Duration
	// Wait, when positive, waits up to that long until every member is
	// free at once, holding none of them meanwhile.
	Wait time.Duration
	// LockDelay is each member's lock delay (AcquireRequest.LockDelay).
	LockDelay time.Duration
}

// LockSetResult says whether the caller got the whole set.
type LockSetResult struct {
	Acquired bool
	// Locks are the caller's leases when Acquired, one per resource in
	// the request's order, each with its own token.
	Locks []Lock
	// Held, when not Acquired, are the members that refused the set
	// (at least one); the caller holds none of the set's new leases.
	Held []HeldMember
	// Waited: the request waited (Wait > 0 and the set was not free at
	// once).
	Waited bool
}

// HeldMember is a member of a refused lock set and how long until it
// frees itself, by the Redis server's clock.
type HeldMember struct {
	Resource   string
	RetryAfter time.Duration
	// Delayed: the member's last lease has expired but is in its lock
	// delay.
	Delayed bool
}

// LockSetRelease is the outcome of releasing a lock set.
type LockSetRelease struct {
	// Released are the members whose lease of the owner ended;
	// NotHeld the others (no live lease, or another owner's).
	Released, NotHeld []string
}

// LockSetService takes and releases lock sets in a tenant's namespace.
// Any store error wraps ErrUnavailable and never reports a grant.
type LockSetService interface {
	// AcquireSet takes every member's lease or none: after the answer the
	// owner holds all of the set or none of the leases this call would
	// have granted (a member it held before keeps its lease).
	AcquireSet(ctx context.Context, tenant string, req LockSetRequest) (LockSetResult, error)
	// ReleaseSet ends owner's leases on resources.
	ReleaseSet(ctx context.Context, tenant, owner string, resources []string) (LockSetRelease, error)
}
