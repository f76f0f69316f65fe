package redislock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/scriptreply"
	"github.com/leasegate/leasegate/scripts"
)

// One line per name (docs/waiting.md). A waiting acquire stands in the
// resource's line in Redis (keyspace.Resource.Queue: owner by arrival;
// the deadlines of the tickets in Resource.Waiters), whichever gateway it
// came through. Its first try takes its ticket in the same script run
// that finds the lease held, so Redis alone decides the order; a grant
// goes to a non-holder only when the line is empty or the caller stands
// first. Each waiter renews its ticket with its tries, at least every
// TicketRenew; a ticket not renewed for TicketLease (its gateway died)
// is dead, and the next script that meets it at the front removes it.

// TicketLease is how long a waiter's place in line lives without being
// renewed; its gateway renews it every TicketRenew. A waiter whose
// gateway dies leaves the line at most TicketLease after its last
// renewal, so the next in line is granted at most TicketLease (plus
// ExpiryMargin) after a release.
const (
	TicketLease = 3 * time.Second
	TicketRenew = TicketLease / 3
)

// leave takes owner's ticket out of resource's line in l's tenant, and
// wakes the next in line if it stood first.
func (l *Locker) leave(ctx context.Context, resource, owner string) error {
	lock, waiters, queue := l.keys.LockKeys(l.tenant, resource)
	return Leave(ctx, l.rdb, []string{lock, waiters, queue}, owner, l.releaseChannel(l.tenant, resource))
}

// Leave runs leave.lua (the lock engine's and the semaphores' waiters):
// keys are the name's release message, its tickets' hash and its line;
// channel is its release channel ("" none).
func Leave(ctx context.Context, rdb redis.Scripter, keys []string, owner, channel string) error {
	if err := scripts.Leave.Run(ctx, rdb, keys, owner, channel).Err(); err != nil {
		return scriptreply.Unavailable(err)
	}
	return nil
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

// newWatcherID is a fresh id for an event watcher's entry among a key's
// waiters (watch.lua), unique across gateways.
func newWatcherID() string {
	return "watch-" + waiterIDPrefix + strconv.FormatUint(waiterIDSeq.Add(1), 36)
}
