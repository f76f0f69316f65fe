package redislock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/leasegate/leasegate/internal/scriptreply"
	"github.com/leasegate/leasegate/scripts"
)

// registration is one waiting acquire's entry among the waiters of its
// resource (the resource's waiters key, docs/keys.md), so that a release
// publishes a wake-up while it waits, fleet-wide. The Waiter gives it to
// each try explicitly: the first try that finds the lease someone else's
// adds the entry in the same script run, so a release either comes before
// it (and the try would have found the lock free) or after it, and
// publishes: no lost wake-up. The granting try takes the entry out; only
// a wait that ends without the lock costs one more call (leave).
type registration struct {
	id         string
	ttl        time.Duration
	registered atomic.Bool
	// standsFor is how many requests the entry counts for in the listing:
	// the Waiter sets it to its queue's length before each try of the
	// head (0: 1).
	standsFor atomic.Int64
}

// newRegistration returns a registration with a fleet-unique id whose
// entry lives at least ttl (the wait and a margin; a gateway that dies
// while waiting is forgotten then).
func newRegistration(ttl time.Duration) *registration {
	return &registration{id: newWaiterID(), ttl: ttl}
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

// leave removes r's entry from resource's waiters in l's tenant.
func (l *Locker) leave(ctx context.Context, resource string, r *registration) error {
	_, waiters := l.keys.LockKeys(l.tenant, resource)
	if err := scripts.Interest.Run(ctx, l.rdb, []string{waiters}, r.id).Err(); err != nil {
		return scriptreply.Unavailable(err)
	}
	return nil
}

// newWatcherID is a fresh id for an event watcher's entry among a key's
// waiters (watch.lua), unique across gateways as a waiter's id is.
func newWatcherID() string { return "watch-" + newWaiterID() }
