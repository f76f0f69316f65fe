// Package redislock is leasegate's lock engine: TTL leases on Redis with
// owner checks and fencing tokens, each operation one atomic Lua script.
//
// Service is its API (the domain's leasegate.LockService); a Locker holds
// the configuration and runs the scripts, a Waiter queues waiting
// acquires, an Operator lists and force-releases. It has no HTTP in it.
package redislock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/scriptreply"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/scripts"
)

// Errors of the lock engine's own. Check them with errors.Is. Every other
// error is the domain's (package leasegate): ErrLockNotHeld (no live
// lease: none, or expired), ErrLockForbidden (another owner's lease, or
// another token) and ErrUnavailable, which wraps every Redis failure
// (connection, timeout, script error); no lease is ever reported as
// granted with it. Callers that speak only the domain recognise them.
var (
	// ErrBadReply: a script answered in a shape it never documents.
	ErrBadReply = errors.New("redislock: unexpected script reply")
	// ErrNotReplicated: with Config.MinReplicas, fewer replicas than asked
	// acknowledged a grant in time. An acquire was undone; a renew left the
	// lease as it was before (see replicate.go). It wraps ErrUnavailable,
	// so callers that map ErrUnavailable to 503 need nothing more.
	ErrNotReplicated = fmt.Errorf("redislock: grant not acknowledged by enough replicas: %w", leasegate.ErrUnavailable)
)

// replies decodes the scripts' replies; its errors wrap ErrBadReply.
var replies = scriptreply.Decoder{Bad: ErrBadReply}

// Locker runs the lock scripts for Service, the Waiter and the Operator:
// one try each of acquire, status, renew and release. It is safe for
// concurrent use. Tenant returns a view that lives in another namespace.
type Locker struct {
	rdb    redis.Scripter
	cfg    Config
	rep    Replication
	keys   keyspace.Space
	tenant string
	// The script arguments that never change, converted to interface
	// values once instead of on every call.
	retentionArg interface{}
	// secondStepIndex: the lock index is written in a second step, not
	// in the scripts (Redis Cluster, index.go).
	secondStepIndex bool
	// indexCache holds the tenants' index keys (index.go).
	indexCache *indexKeys
}

// New returns a Locker on rdb (a *redis.Client, *redis.ClusterClient,
// or any redis.UniversalClient).
func New(rdb redis.Scripter, cfg Config) *Locker {
	cfg = cfg.Defaults()
	return &Locker{rdb: rdb, cfg: cfg, keys: keyspace.Space{Prefix: cfg.Prefix},
		rep:             cfg.Replication(rdb),
		retentionArg:    cfg.FenceRetention.Milliseconds(),
		secondStepIndex: onCluster(rdb), indexCache: &indexKeys{m: map[string]string{}}}
}

// Tenant returns a Locker whose resources live in tenant's namespace: the
// same resource name in two tenants is two different locks.
func (l *Locker) Tenant(tenant string) *Locker {
	c := *l
	c.tenant = tenant
	return &c
}

// Keys returns the lock and waiters keys of resource in this Locker's
// tenant (package keyspace lays them out).
func (l *Locker) Keys(resource string) (lock, waiters string) {
	lock, waiters, _ = l.keys.LockKeys(l.tenant, resource)
	return lock, waiters
}

// ReleaseMessage is what the release script publishes on ReleaseChannel for
// resource: its lock key, which names tenant and resource uniquely.
func (l *Locker) ReleaseMessage(resource string) string {
	lock, _, _ := l.keys.LockKeys(l.tenant, resource)
	return lock
}

// releaseChannel is the channel a release of resource publishes on, "" for
// none (Config.Channel).
func (l *Locker) releaseChannel(tenant, resource string) string {
	return l.cfg.Channel(func() string { return l.keys.Resource(tenant, resource).Released() })
}

// shardChannel is the shard channel a waiter on resource subscribes to,
// "" when releases are not sharded.
func (l *Locker) shardChannel(resource string) string {
	return l.cfg.ShardChannel(func() string { return l.keys.Resource(l.tenant, resource).Released() })
}

// acquire is one try of Service.Acquire in tenant. lease is the lease of
// the caller's ticket in the resource's line (TicketLease for a waiting
// acquire, 0 for one that does not wait): a refused try of a waiting
// acquire takes or keeps its place in line (docs/waiting.md).
func (l *Locker) acquire(ctx context.Context, tenant, resource, owner string, ttl, delay, lease time.Duration) (leasegate.AcquireResult, error) {
	lock, waiters, queue := l.keys.LockKeys(tenant, resource)
	ttlMS := ttl.Milliseconds()
	if ttlMS <= 0 {
		return leasegate.AcquireResult{}, fmt.Errorf("redislock: ttl %v must be at least 1ms", ttl)
	}
	delayMS, err := delayArg(delay)
	if err != nil {
		return leasegate.AcquireResult{}, err
	}
	keys := append(make([]string, 0, 4), lock, waiters, queue) // room for the index
	if !l.secondStepIndex {
		keys = append(keys, l.indexKey(tenant))
	}
	v, acked, err := l.rep.Run(ctx, scripts.Acquire, keys, owner, ttlMS, l.retentionArg, lease.Milliseconds(), resource, delayMS,
		l.releaseChannel(tenant, resource))
	if err != nil {
		return leasegate.AcquireResult{}, scriptreply.Unavailable(err)
	}
	str, ok := v.(string)
	if !ok {
		return leasegate.AcquireResult{}, fmt.Errorf("%w: acquire: %v", ErrBadReply, v)
	}
	a, err := decodeAcquire(resource, str)
	if err != nil {
		return leasegate.AcquireResult{}, err
	}
	res := leasegate.AcquireResult{Acquired: a.granted, Lock: a.lock, Delayed: a.delayed}
	if res.Acquired && acked != nil {
		// A new lease is undone: a failover could give it to another.
		// A renewed one is left as it was, as Renew leaves it: the
		// caller held it before this call and may be working under it,
		// so taking it away now would let another owner in before the
		// caller hears of it. Its extension may not survive a failover;
		// the expiry the caller had does.
		if !a.renewed {
			l.undoAcquire(ctx, tenant, resource, owner, a.lock.Token)
		}
		return leasegate.AcquireResult{}, acked
	}
	if res.Acquired && !a.renewed {
		l.indexSecondStep(ctx, tenant, resource)
	}
	if !res.Acquired {
		free := a.lock.ExpiresAt.UnixMilli()
		if a.delayed || a.behind {
			free = a.freeAtMS
		}
		if a.behind {
			res.Lock = leasegate.Lock{Resource: resource}
		}
		res.RetryAfter = time.Duration(free-a.nowMS) * time.Millisecond
	}
	return res, nil
}

// delayArg is the lock delay argument of acquire.lua, in milliseconds:
// 0 up to leasegate.MaxLockDelay.
func delayArg(delay time.Duration) (int64, error) {
	if delay < 0 || delay > leasegate.MaxLockDelay {
		return 0, fmt.Errorf("redislock: lock delay %v must be 0..%v", delay, leasegate.MaxLockDelay)
	}
	return delay.Milliseconds(), nil
}

// acquireReply is acquire.lua's answer.
type acquireReply struct {
	granted bool
	// renewed: the caller held the lease already (flag 3).
	renewed bool
	lock    leasegate.Lock
	nowMS   int64
	// delayed: refused by the expired lease's lock delay, until freeAtMS.
	delayed  bool
	freeAtMS int64
	// behind: free, but others stand ahead in line (flag 4); freeAtMS is
	// the soonest deadline of their tickets.
	behind bool
}

// decodeAcquire reads acquire.lua's one-string reply,
// '<flag> <token> <acquired_at_ms> <expires_at_ms> <now_ms> <owner>'
// (flag 1 a new lease, 3 a renewed one, 0 refused): five decimal fields
// (six with flag 2, a lock delay's refusal, and flag 4, others ahead in
// line: then free_at_ms comes before the owner), then the owner verbatim
// (it may hold spaces; empty with flag 4).
func decodeAcquire(resource, s string) (acquireReply, error) {
	var n [6]int64
	rest := s
	fields := 5
	if strings.HasPrefix(s, "2 ") || strings.HasPrefix(s, "4 ") {
		fields = 6
	}
	for i := range fields {
		j := strings.IndexByte(rest, ' ')
		if j < 0 {
			return acquireReply{}, fmt.Errorf("%w: acquire: %q", ErrBadReply, s)
		}
		v, err := strconv.ParseInt(rest[:j], 10, 64)
		if err != nil {
			return acquireReply{}, fmt.Errorf("%w: acquire: %q", ErrBadReply, s)
		}
		n[i] = v
		rest = rest[j+1:]
	}
	// The owner may be empty (the lock engine itself does not require
	// one; the HTTP layer does): the space before it is still there.
	if n[0] < 0 || n[0] > 4 {
		return acquireReply{}, fmt.Errorf("%w: acquire: %q", ErrBadReply, s)
	}
	return acquireReply{
		delayed:  n[0] == 2,
		behind:   n[0] == 4,
		freeAtMS: n[5],
		granted:  n[0] == 1 || n[0] == 3,
		renewed:  n[0] == 3,
		lock: leasegate.Lock{
			Resource:   resource,
			Owner:      rest,
			Token:      n[1],
			AcquiredAt: time.UnixMilli(n[2]).UTC(),
			ExpiresAt:  time.UnixMilli(n[3]).UTC(),
		},
		nowMS: n[4],
	}, nil
}

// status, renew and release are one call each of Service's, in tenant.
func (l *Locker) status(ctx context.Context, tenant, resource string) (leasegate.Lock, error) {
	lock, _, _ := l.keys.LockKeys(tenant, resource)
	v, err := scripts.Status.Run(ctx, l.rdb, []string{lock}).Result()
	if err != nil {
		return leasegate.Lock{}, scriptreply.Unavailable(err)
	}
	return decodeHeld("status", resource, v)
}

func (l *Locker) renew(ctx context.Context, tenant, resource, owner string, token int64, ttl time.Duration) (leasegate.Lock, error) {
	lock, _, _ := l.keys.LockKeys(tenant, resource)
	ttlMS := ttl.Milliseconds()
	if ttlMS <= 0 {
		return leasegate.Lock{}, fmt.Errorf("redislock: ttl %v must be at least 1ms", ttl)
	}
	v, acked, err := l.rep.Run(ctx, scripts.Renew, []string{lock},
		owner, ttlMS, l.retentionArg, scriptreply.TokenArg(token))
	if err != nil {
		return leasegate.Lock{}, scriptreply.Unavailable(err)
	}
	lk, err := decodeHeld("renew", resource, v)
	if err == nil && acked != nil {
		// The lease is left as it was: its holder must rely only on the
		// expiry it had before this renew (docs/deployment.md).
		return leasegate.Lock{}, acked
	}
	return lk, err
}

func (l *Locker) release(ctx context.Context, tenant, resource, owner string, token int64) (leasegate.ReleaseResult, error) {
	lock, waiters, queue := l.keys.LockKeys(tenant, resource)
	keys := append(make([]string, 0, 4), lock, waiters, queue) // room for the index
	if !l.secondStepIndex {
		keys = append(keys, l.indexKey(tenant))
	}
	v, err := scripts.Release.Run(ctx, l.rdb, keys,
		owner, scriptreply.TokenArg(token), l.releaseChannel(tenant, resource), resource).Result()
	if err != nil {
		return 0, scriptreply.Unavailable(err)
	}
	if n, ok := v.(int64); ok && n >= 1 {
		// 1 + the hold time in milliseconds.
		if l.cfg.OnRelease != nil {
			l.cfg.OnRelease(tenant, resource, time.Duration(n-1)*time.Millisecond)
		}
		v = int64(1)
	}
	return replies.Release("release", v)
}

// decodeHeld decodes the {1, lock...} / {0} / {-1} replies of status and
// renew.
func decodeHeld(op, resource string, v interface{}) (leasegate.Lock, error) {
	arr, ok := v.([]interface{})
	if !ok || len(arr) == 0 {
		return leasegate.Lock{}, fmt.Errorf("%w: %s: %v", ErrBadReply, op, v)
	}
	flag, ok := arr[0].(int64)
	if !ok {
		return leasegate.Lock{}, fmt.Errorf("%w: %s flag %v", ErrBadReply, op, arr[0])
	}
	switch {
	case flag == 0 && len(arr) == 1:
		return leasegate.Lock{}, leasegate.ErrLockNotHeld
	case flag == -1 && len(arr) == 1:
		return leasegate.Lock{}, leasegate.ErrLockForbidden
	case flag == 1 && len(arr) == 5:
		return decodeLock(resource, arr[1:])
	}
	return leasegate.Lock{}, fmt.Errorf("%w: %s: %v", ErrBadReply, op, v)
}

// decodeLock reads {token, acquired_at_ms, expires_at_ms, owner}.
func decodeLock(resource string, f []interface{}) (leasegate.Lock, error) {
	var s [4]string
	for i := range s {
		str, ok := f[i].(string)
		if !ok {
			return leasegate.Lock{}, fmt.Errorf("%w: field %d is %T", ErrBadReply, i, f[i])
		}
		s[i] = str
	}
	tok, err1 := strconv.ParseInt(s[0], 10, 64)
	acq, err2 := strconv.ParseInt(s[1], 10, 64)
	exp, err3 := strconv.ParseInt(s[2], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return leasegate.Lock{}, fmt.Errorf("%w: %v", ErrBadReply, err)
	}
	return leasegate.Lock{
		Resource:   resource,
		Owner:      s[3],
		Token:      tok,
		AcquiredAt: time.UnixMilli(acq).UTC(),
		ExpiresAt:  time.UnixMilli(exp).UTC(),
	}, nil
}
