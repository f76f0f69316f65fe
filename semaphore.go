package leasegate

import (
	"context"
	"time"
)

// MaxSemaphoreLimit is the largest limit a semaphore may have.
const MaxSemaphoreLimit = 10000

// Permit is one holder's leased slot in a counting semaphore.
type Permit struct {
	Name  string
	Owner string
	// Token strictly increases for every new permit on the name, like a
	// lock's fencing token.
	Token      int64
	AcquiredAt time.Time
	ExpiresAt  time.Time
}

// SemaphoreRequest asks for a permit on Name for Owner.
type SemaphoreRequest struct {
	Name  string
	Owner string
	TTL   time.Duration
	// Limit is how many live permits the name may have (1..MaxSemaphoreLimit);
	// it must agree with the limit in force while permits are held.
	Limit int
	// Wait, when positive, waits up to that long for a slot (FIFO, as
	// lock waits do).
	Wait time.Duration
}

// SemaphoreResult says whether the caller got a permit.
type SemaphoreResult struct {
	Acquired bool
	// Permit is the caller's when Acquired.
	Permit Permit
	// Holders is the number of live permits after the call; Limit the
	// limit in force.
	Holders int
	Limit   int
	// RetryAfter, when not Acquired, is how long until the earliest
	// permit expires by the Redis clock.
	RetryAfter time.Duration
	// Waited: the request waited and the slot was not free at once.
	Waited bool
}

// SemaphoreState is what GET /semaphores/{name} shows.
type SemaphoreState struct {
	Name    string
	Limit   int
	Holders []Permit // by expiry, earliest first
}

// The errors of every SemaphoreService.
var (
	// ErrSemaphoreNotHeld: no live permit on the name at all.
	ErrSemaphoreNotHeld = &Error{Code: CodeNotFound, Message: "no live permit on this semaphore", Op: "semaphore"}
	// ErrSemaphoreForbidden: permits are held, none by this owner (or not
	// under this token).
	ErrSemaphoreForbidden = &Error{Code: CodeForbidden, Message: "no live permit of this owner on this semaphore", Op: "semaphore"}
	// ErrLimitMismatch: the request's limit differs from the one in force
	// while permits are held. Returned through Detailed, naming the limit
	// in force.
	ErrLimitMismatch = &Error{Code: CodeLimitMismatch, Message: "the limit differs from the limit in force", Op: "semaphore"}
)

// SemaphoreService hands out leased permits of counting semaphores in a
// tenant's namespace. Any store error wraps ErrUnavailable and never
// grants anything.
type SemaphoreService interface {
	// Acquire takes a permit: fewer than Limit live holders, or owner
	// already holding one (it keeps its permit and token; the expiry
	// moves) -> Acquired; full -> not Acquired, after waiting up to
	// req.Wait. A limit that disagrees with the one in force while
	// permits are held is ErrLimitMismatch.
	Acquire(ctx context.Context, tenant string, req SemaphoreRequest) (SemaphoreResult, error)
	// Status lists the live permits, or ErrSemaphoreNotHeld.
	Status(ctx context.Context, tenant, name string) (SemaphoreState, error)
	// Renew moves the expiry of owner's permit to now+ttl.
	// ErrSemaphoreNotHeld when there are no live permits,
	// ErrSemaphoreForbidden when none is owner's.
	Renew(ctx context.Context, tenant, name, owner string, ttl time.Duration) (Permit, error)
	// Release gives owner's permit back (token 0: any token of owner).
	// NotFound when no live permit at all, Forbidden when none is owner's.
	Release(ctx context.Context, tenant, name, owner string, token int64) (ReleaseResult, error)
}
