package leasegate

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// Lock is a live lease on a resource.
type Lock struct {
	Resource string
	Owner    string
	// Token is the fencing token: it strictly increases for every new
	// holder of the resource (docs/fencing.md).
	Token      int64
	AcquiredAt time.Time
	ExpiresAt  time.Time
}

// AcquireRequest asks for the lease on Resource for Owner.
type AcquireRequest struct {
	Resource string
	Owner    string
	TTL      time.Duration
	// Wait, when positive, waits up to that long for a release or expiry
	// instead of answering "contended" at once (docs/waiting.md).
	Wait time.Duration
	// LockDelay, when positive, keeps the resource from every other owner
	// for that long after this lease ends by expiry (not by a release or
	// a forced release): Chubby's and Consul's lock-delay
	// (docs/fencing.md, "Lock delay"). At most MaxLockDelay.
	LockDelay time.Duration
}

// MaxLockDelay is the longest lock delay an acquire may ask for.
const MaxLockDelay = time.Minute

// AcquireResult says whether the caller got the lease.
type AcquireResult struct {
	Acquired bool
	// Lock is the caller's lease when Acquired, otherwise the current
	// holder's (so callers can tell how long to wait).
	Lock Lock
	// RetryAfter, when not Acquired, is how long the holder's lease has
	// left by the Redis server's clock, or, when Delayed, how long the
	// expired lease's lock delay has left.
	RetryAfter time.Duration
	// Delayed: not Acquired because the last lease expired and is still in
	// its lock delay; Lock is that expired lease (ExpiresAt in the past).
	Delayed bool
	// Waited: the request waited (Wait > 0 and the lease was not free at
	// once).
	Waited bool
}

// ReleaseResult is the outcome of a release.
type ReleaseResult int

// Release outcomes.
const (
	Released ReleaseResult = iota + 1
	// NotFound: no live lease (none, or expired).
	NotFound
	// Forbidden: held by another owner, or under another token.
	Forbidden
)

func (r ReleaseResult) String() string {
	switch r {
	case Released:
		return "released"
	case NotFound:
		return "not_found"
	case Forbidden:
		return "forbidden"
	}
	return "ReleaseResult(" + strconv.Itoa(int(r)) + ")"
}

// The errors every LockService returns, whatever its backend: check them
// with errors.Is.
var (
	// ErrLockNotHeld: no live lease on the resource (none, or expired).
	ErrLockNotHeld = &Error{Code: CodeNotFound, Message: "no live lock on this resource", Op: "lock"}
	// ErrLockForbidden: the lease belongs to another owner, or the token
	// differs.
	ErrLockForbidden = &Error{Code: CodeForbidden, Message: "the lock is held by another owner or under another token", Op: "lock"}
	// ErrTooManyWaiters: the gateway already holds as many waiting
	// acquires as it is configured to (--max-waiters); nothing was
	// queued or changed. Another gateway, or a retry, may have room.
	ErrTooManyWaiters = &Error{Code: CodeUnavailable, Op: "lock", RetryAfter: DefaultRetryAfter,
		Message: "this gateway is already holding as many waiting acquires as it allows (--max-waiters); nothing was changed, retry later or without wait_ms"}
	// ErrShuttingDown: the gateway is shutting down and ended the wait
	// (or the event stream) with nothing granted or changed; the caller
	// retries at once, through another gateway (docs/deployment.md,
	// "Rolling restarts").
	ErrShuttingDown = &Error{Code: CodeUnavailable, RetryAfter: DefaultRetryAfter,
		Message: "this gateway is shutting down; nothing was changed, retry (another gateway will answer)"}
	// ErrUnavailable: the store failed; nothing was granted or changed.
	ErrUnavailable = &Error{Code: CodeUnavailable, Message: UnavailableMessage, RetryAfter: DefaultRetryAfter, Op: "store"}
	// ErrStoreDown is wrapped, beside ErrUnavailable, by the error of a
	// call refused without trying the store because it is known to be
	// down. It is answered as ErrUnavailable is, but not logged per call:
	// the outage is logged once, when the store goes down.
	ErrStoreDown = errors.New("leasegate: the store is known to be down")
)

// LockService takes, reads, renews and releases leases on resources in a
// tenant's namespace. Any store error wraps ErrUnavailable and never
// grants anything.
type LockService interface {
	// Acquire takes the lease: free, expired or already the owner's ->
	// Acquired (the same owner keeps its token); another owner's live
	// lease -> not Acquired, after waiting up to req.Wait.
	Acquire(ctx context.Context, tenant string, req AcquireRequest) (AcquireResult, error)
	// Status returns the live lease, or ErrLockNotHeld.
	Status(ctx context.Context, tenant, resource string) (Lock, error)
	// Renew moves the expiry of owner's live lease to now+ttl, keeping its
	// token (token 0: any token of owner). ErrLockNotHeld when none or
	// expired, ErrLockForbidden for another owner or token.
	Renew(ctx context.Context, tenant, resource, owner string, token int64, ttl time.Duration) (Lock, error)
	// Release ends owner's lease (token 0: any token of owner). The error
	// is non-nil only when the store failed; the outcome is the result.
	Release(ctx context.Context, tenant, resource, owner string, token int64) (ReleaseResult, error)
}
