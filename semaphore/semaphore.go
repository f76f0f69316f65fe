// Package semaphore is leasegate's counting semaphores on Redis: up to a
// limit of holders at once on one name, each with its own leased permit
// and fencing token, each operation one atomic Lua script
// (docs/semaphores.md). Waiting acquires run on the lock engine's Waiter
// (redislock.Waiter.WaitFor): the same subscription, FIFO queues and
// wake-ups.
package semaphore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/scriptreply"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/scripts"
)

// ErrBadReply: a script answered in a shape it never documents.
var ErrBadReply = errors.New("semaphore: unexpected script reply")

var reply = scriptreply.Decoder{Bad: ErrBadReply}

// Service is leasegate.SemaphoreService on Redis. It is safe for
// concurrent use.
type Service struct {
	rdb    redis.Scripter
	rep    redislock.Replication
	cfg    redislock.Config
	keys   keyspace.Space
	waiter *redislock.Waiter
}

var _ leasegate.SemaphoreService = (*Service)(nil)

// New returns a Service on rdb configured by cfg, as the locks are: with
// cfg.MinReplicas every grant (an acquire that gave a permit, and every
// renew) waits for replicas, and one not acknowledged in time returns
// redislock.ErrNotReplicated, an acquire undone, a renew not confirmed
// (rdb must then be a *redis.Client or a *redis.ClusterClient). Waiting
// acquires go through w (nil: a Waiter without a subscription, which
// notices releases by polling).
func New(rdb redis.Scripter, w *redislock.Waiter, cfg redislock.Config) *Service {
	if w == nil {
		w = redislock.NewWaiter(nil, redislock.WaiterOptions{})
	}
	cfg = cfg.Defaults()
	return &Service{rdb: rdb, rep: cfg.Replication(rdb), cfg: cfg, keys: keyspace.Space{Prefix: cfg.Prefix}, waiter: w}
}

// Keys returns the keys of name in tenant.
func (s *Service) Keys(tenant, name string) keyspace.Semaphore {
	return s.keys.Semaphore(tenant, name)
}

// Acquire implements leasegate.SemaphoreService.
func (s *Service) Acquire(ctx context.Context, tenant string, req leasegate.SemaphoreRequest) (leasegate.SemaphoreResult, error) {
	if req.TTL.Milliseconds() <= 0 {
		return leasegate.SemaphoreResult{}, fmt.Errorf("semaphore: ttl %v must be at least 1ms", req.TTL)
	}
	if req.Limit < 1 || req.Limit > leasegate.MaxSemaphoreLimit {
		return leasegate.SemaphoreResult{}, fmt.Errorf("semaphore: limit %d is not in 1..%d", req.Limit, leasegate.MaxSemaphoreLimit)
	}
	k := s.Keys(tenant, req.Name)
	if req.Wait <= 0 {
		return s.acquire(ctx, k, req, 0)
	}
	// WaitFor tries at least once before it returns without an error, so
	// last is a try's answer below.
	var last leasegate.SemaphoreResult
	done, waited, err := s.waiter.WaitFor(ctx, redislock.WaitOptions{
		Key: k.Permits(), Channel: s.cfg.ShardChannel(k.Released), Owner: req.Owner, Wait: req.Wait, OpTimeout: s.cfg.OpTimeout,
		Leave: func(ctx context.Context) error {
			return redislock.Leave(ctx, s.rdb, []string{k.Permits(), k.Waiters(), k.Queue()}, req.Owner, s.channel(k))
		},
	}, func(ctx context.Context, lease time.Duration) (bool, time.Duration, error) {
		res, err := s.acquire(ctx, k, req, lease)
		if err != nil {
			return false, 0, err
		}
		last = res
		return res.Acquired, res.RetryAfter, nil
	})
	if err != nil {
		return leasegate.SemaphoreResult{Waited: waited}, err
	}
	res := last
	if !done {
		res.Acquired = false
		res.Permit = leasegate.Permit{}
	}
	res.Waited = waited
	return res, nil
}

// acquire is one try; lease is the lease of the caller's ticket in the
// semaphore's line (0: a call that does not wait takes no place).
func (s *Service) acquire(ctx context.Context, k keyspace.Semaphore, req leasegate.SemaphoreRequest, lease time.Duration) (leasegate.SemaphoreResult, error) {
	v, arr, flag, acked, err := s.rep.RunFlagged(ctx, reply, scripts.SemAcquire, "sem_acquire",
		[]string{k.Permits(), k.Holders(), k.Limit(), k.Fence(), k.Waiters(), k.Queue()},
		req.Owner, req.TTL.Milliseconds(), req.Limit, s.cfg.FenceRetention.Milliseconds(), lease.Milliseconds())
	if err != nil {
		return leasegate.SemaphoreResult{}, err
	}
	switch {
	case (flag == 1 || flag == 2) && len(arr) == 6:
		p, err := decodePermit(req.Name, req.Owner, arr[1:4])
		holders, ok1 := arr[4].(int64)
		limit, ok2 := arr[5].(int64)
		if err != nil || !ok1 || !ok2 {
			return leasegate.SemaphoreResult{}, reply.Reply("sem_acquire", v)
		}
		if acked != nil {
			if flag == 2 {
				// Renewed: the caller held the permit before this call
				// and may be working under it. Left as it was, as a
				// lock's renewal is; its extension may not survive a
				// failover, the expiry the caller had does.
				return leasegate.SemaphoreResult{}, acked
			}
			// Not on enough replicas: a failover could lose it and give
			// the slot to another. Undone, as a lock's grant is. If the
			// undo fails, the permit runs out by its TTL, held by an
			// owner who was told no.
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			_, _ = s.release(uctx, k, req.Owner, p.Token)
			return leasegate.SemaphoreResult{}, acked
		}
		return leasegate.SemaphoreResult{Acquired: true, Permit: p, Holders: int(holders), Limit: int(limit)}, nil
	case flag == 0 && len(arr) == 4:
		holders, ok1 := arr[1].(int64)
		limit, ok2 := arr[2].(int64)
		retry, err := reply.Int(arr[3])
		if !ok1 || !ok2 || err != nil {
			return leasegate.SemaphoreResult{}, reply.Reply("sem_acquire", v)
		}
		return leasegate.SemaphoreResult{Holders: int(holders), Limit: int(limit), RetryAfter: time.Duration(retry) * time.Millisecond}, nil
	case flag == -1 && len(arr) == 3:
		inForce, err := reply.Int(arr[1])
		holders, ok := arr[2].(int64)
		if err != nil || !ok {
			return leasegate.SemaphoreResult{}, reply.Reply("sem_acquire", v)
		}
		return leasegate.SemaphoreResult{}, leasegate.Detailed(leasegate.ErrLimitMismatch,
			fmt.Sprintf("limit %d differs from the limit in force, %d, while %d permits are held", req.Limit, inForce, holders), 0)
	}
	return leasegate.SemaphoreResult{}, reply.Reply("sem_acquire", v)
}

// Status implements leasegate.SemaphoreService.
func (s *Service) Status(ctx context.Context, tenant, name string) (leasegate.SemaphoreState, error) {
	return s.status(ctx, s.Keys(tenant, name), name)
}

func (s *Service) status(ctx context.Context, k keyspace.Semaphore, name string) (leasegate.SemaphoreState, error) {
	v, arr, flag, err := reply.RunFlagged(ctx, s.rdb, scripts.SemStatus, "sem_status", []string{k.Permits(), k.Holders(), k.Limit()})
	if err != nil {
		return leasegate.SemaphoreState{}, err
	}
	switch {
	case flag == 0 && len(arr) == 1:
		return leasegate.SemaphoreState{}, leasegate.ErrSemaphoreNotHeld
	case flag == 1 && len(arr) >= 2 && (len(arr)-2)%4 == 0:
	default:
		return leasegate.SemaphoreState{}, reply.Reply("sem_status", v)
	}
	limit, err := reply.Int(arr[1])
	if err != nil {
		return leasegate.SemaphoreState{}, reply.Reply("sem_status", v)
	}
	st := leasegate.SemaphoreState{Name: name, Limit: int(limit)}
	for i := 2; i < len(arr); i += 4 {
		owner, ok := arr[i].(string)
		if !ok {
			return leasegate.SemaphoreState{}, reply.Reply("sem_status", v)
		}
		p, err := decodePermit(name, owner, arr[i+1:i+4])
		if err != nil {
			return leasegate.SemaphoreState{}, err
		}
		st.Holders = append(st.Holders, p)
	}
	if len(st.Holders) == 0 {
		return leasegate.SemaphoreState{}, leasegate.ErrSemaphoreNotHeld
	}
	return st, nil
}

// Renew implements leasegate.SemaphoreService.
func (s *Service) Renew(ctx context.Context, tenant, name, owner string, ttl time.Duration) (leasegate.Permit, error) {
	if ttl.Milliseconds() <= 0 {
		return leasegate.Permit{}, fmt.Errorf("semaphore: ttl %v must be at least 1ms", ttl)
	}
	k := s.Keys(tenant, name)
	v, arr, flag, acked, err := s.rep.RunFlagged(ctx, reply, scripts.SemRenew, "sem_renew",
		[]string{k.Permits(), k.Holders(), k.Limit(), k.Fence()},
		owner, ttl.Milliseconds(), s.cfg.FenceRetention.Milliseconds())
	if err != nil {
		return leasegate.Permit{}, err
	}
	switch {
	case flag == 0 && len(arr) == 1:
		return leasegate.Permit{}, leasegate.ErrSemaphoreNotHeld
	case flag == -1 && len(arr) == 1:
		return leasegate.Permit{}, leasegate.ErrSemaphoreForbidden
	case flag == 1 && len(arr) == 4:
		p, err := decodePermit(name, owner, arr[1:4])
		if err == nil && acked != nil {
			// The extension may not survive a failover: the holder
			// counts on the expiry it had. The permit stays (as a
			// lock's lease does): taking it for a replica's hiccup
			// would stop a holder in the middle of its work.
			return leasegate.Permit{}, acked
		}
		return p, err
	}
	return leasegate.Permit{}, reply.Reply("sem_renew", v)
}

// Release implements leasegate.SemaphoreService.
func (s *Service) Release(ctx context.Context, tenant, name, owner string, token int64) (leasegate.ReleaseResult, error) {
	return s.release(ctx, s.Keys(tenant, name), owner, token)
}

func (s *Service) release(ctx context.Context, k keyspace.Semaphore, owner string, token int64) (leasegate.ReleaseResult, error) {
	v, err := scripts.SemRelease.Run(ctx, s.rdb, []string{k.Permits(), k.Holders(), k.Limit(), k.Waiters(), k.Queue()},
		owner, scriptreply.TokenArg(token), s.channel(k)).Result()
	if err != nil {
		return 0, scriptreply.Unavailable(err)
	}
	return reply.Release("sem_release", v)
}

// decodePermit reads {token, acquired_at_ms, expires_at_ms}.
func decodePermit(name, owner string, f []any) (leasegate.Permit, error) {
	tok, acq, exp, err := reply.Lease(f)
	if err != nil {
		return leasegate.Permit{}, err
	}
	return leasegate.Permit{Name: name, Owner: owner, Token: tok, AcquiredAt: acq, ExpiresAt: exp}, nil
}

// channel is where k's releases publish, "" for none.
func (s *Service) channel(k keyspace.Semaphore) string {
	return s.cfg.Channel(k.Released)
}
