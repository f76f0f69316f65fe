package leasegate

import (
	"context"
	"time"
)

// Seeing and acting on locks (docs/operations.md): the listing, the
// forced release, the live events of one resource, and the audit trail of
// operator actions.

// HeldLock is a live lease as a listing shows it: the lease and how many
// acquires wait on it (best effort).
type HeldLock struct {
	Lock
	Waiters int
}

// LockPage is one page of a listing. NextCursor is "" after the last page.
type LockPage struct {
	Items      []HeldLock
	NextCursor string
}

// Listing bounds.
const (
	DefaultLockPageSize = 100
	MaxLockPageSize     = 1000
)

// LockEventKind names a change of a resource's lease.
type LockEventKind string

// The events of GET /locks/{resource}/events.
const (
	EventState         LockEventKind = "state"
	EventAcquired      LockEventKind = "acquired"
	EventRenewed       LockEventKind = "renewed"
	EventReleased      LockEventKind = "released"
	EventExpired       LockEventKind = "expired"
	EventForceReleased LockEventKind = "force-released"
)

// LockEvent is one change of a resource's lease. Lock is nil only for a
// state event of a resource nobody holds; for released, expired and
// force-released it is the lease that ended.
type LockEvent struct {
	Kind LockEventKind
	Lock *Lock
	At   time.Time
}

// LockOperator is what an operator may see and do with the locks of a
// tenant. Any store error wraps ErrUnavailable.
type LockOperator interface {
	// List returns live leases whose resource starts with prefix, in
	// resource order, after cursor ("" = from the start), at most limit.
	// A lease that has expired is never listed; one held throughout a
	// paging is on exactly one page.
	List(ctx context.Context, tenant, prefix, cursor string, limit int) (LockPage, error)
	// ForceRelease ends whoever's lease on resource, wakes its waiters and
	// burns its token: its holder's renew and release then find nothing,
	// and the next holder gets a larger token. ErrLockNotHeld when no
	// live lease.
	// reason and meta are for the audit trail (package audit records
	// them around a LockOperator).
	ForceRelease(ctx context.Context, tenant, resource, reason string, meta RequestMeta) (Lock, error)
	// Watch sends the changes of resource's lease on events, starting with
	// an EventState, until ctx ends (its error is then nil) or the store
	// fails. It never closes events.
	Watch(ctx context.Context, tenant, resource string, events chan<- LockEvent) error
}

// Audit actions: every operator action writes one AuditRecord.
const (
	AuditForceRelease = "force-release"
	AuditBan          = "ban"
	AuditUnban        = "unban"
	AuditClear        = "clear"
	AuditKeyReload    = "key-reload"
	AuditClaimRemove  = "claim-remove"
)

// AuditRecord is one operator action. Reason is the operator's text
// exactly as given ("" when none); the other facts of the action are in
// Details (contract v1.2, "Audit records").
type AuditRecord struct {
	// ID orders the records (newest has the largest) and is the cursor.
	ID        string
	At        time.Time
	Actor     string
	Action    string
	Target    string
	Reason    string
	Details   AuditDetails
	RequestID string
}

// AuditPage is one page of the audit trail, newest first. NextCursor is
// "" after the last page.
type AuditPage struct {
	Items      []AuditRecord
	NextCursor string
}

// DefaultAuditRetention is how long audit records are kept by default.
const DefaultAuditRetention = 90 * 24 * time.Hour

// AuditLog keeps the operator actions of each tenant. Record fills in
// ID and, when zero, At. Any store error wraps ErrUnavailable.
type AuditLog interface {
	Record(ctx context.Context, tenant string, r AuditRecord) error
	List(ctx context.Context, tenant, cursor string, limit int) (AuditPage, error)
}
