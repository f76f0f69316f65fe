package redislock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/scriptreply"
	"github.com/leasegate/leasegate/scripts"
)

// Lock sets (docs/lock-sets.md): the leases of several resources, taken
// all or none.
//
//   - A single Redis and Sentinel: one acquire_set.lua run over every
//     member's keys checks them all and grants all or none, atomically;
//     release_set.lua ends them in one run.
//   - Redis Cluster, where one script touches one slot and every resource
//     has a slot of its own: the members are tried one script run each
//     (acquire_set.lua with one member), in a fixed order (by lock key),
//     stopping at the first refusal; then the members this call granted
//     are released again, each by its new token, before the answer. A
//     member the owner held before the call keeps its lease.
//
// A waiting set never holds some members while it waits for others: each
// try is all or none, and between tries the set stands in the line of
// every member (on a single Redis and Sentinel, where one script run
// takes all its places at once), so that a release of any of them wakes
// it and single waiters that came later do not pass it. On Redis
// Cluster a set's tries stay outside the lines (docs/lock-sets.md).

var _ leasegate.LockSetService = (*Service)(nil)

// ErrBadLockSet: the request names no resource, more than
// leasegate.MaxLockSet, or one twice.
var ErrBadLockSet = errors.New("redislock: a lock set names 1 to 64 distinct resources")

// rollbackTries is how often a rollback on Redis Cluster retries a
// release that failed before it gives up on that member (whose lease
// then ends by its TTL).
const rollbackTries = 3

func checkSet(resources []string) error {
	if len(resources) == 0 || len(resources) > leasegate.MaxLockSet {
		return ErrBadLockSet
	}
	seen := make(map[string]struct{}, len(resources))
	for _, r := range resources {
		if _, dup := seen[r]; dup {
			return ErrBadLockSet
		}
		seen[r] = struct{}{}
	}
	return nil
}

// acquireSet is one try of a lock set in tenant. lease is the lease of
// the set's tickets (TicketLease for a waiting set, 0 for one that does
// not wait): a refused try takes its place in every member's line.
func (l *Locker) acquireSet(ctx context.Context, tenant string, req leasegate.LockSetRequest, lease time.Duration) (leasegate.LockSetResult, error) {
	if err := checkSet(req.Resources); err != nil {
		return leasegate.LockSetResult{}, err
	}
	ttlMS := req.TTL.Milliseconds()
	if ttlMS <= 0 {
		return leasegate.LockSetResult{}, fmt.Errorf("redislock: ttl %v must be at least 1ms", req.TTL)
	}
	delayMS, err := delayArg(req.LockDelay)
	if err != nil {
		return leasegate.LockSetResult{}, err
	}
	if l.secondStepIndex {
		return l.acquireSetPerMember(ctx, tenant, req, ttlMS, delayMS, lease)
	}
	res, granted, acked, err := l.runAcquireSet(ctx, tenant, req.Resources, req.Owner, ttlMS, delayMS, lease.Milliseconds(), true)
	if err != nil {
		return leasegate.LockSetResult{}, err
	}
	if acked != nil {
		l.rollback(ctx, tenant, req.Owner, granted)
		return leasegate.LockSetResult{}, acked
	}
	return res, nil
}

// grant is a member's lease that this call created (not one the owner
// already held): what a rollback releases, by its token.
type grant struct {
	resource string
	token    int64
}

// runAcquireSet runs acquire_set.lua once over resources (all in one
// slot, or a single Redis) with its tickets' lease in ms. index: a
// single Redis or Sentinel, which also keeps the lines; without it the
// run is one member on Redis Cluster, outside the lines.
func (l *Locker) runAcquireSet(ctx context.Context, tenant string, resources []string, owner string, ttlMS, delayMS, leaseMS int64, index bool) (res leasegate.LockSetResult, granted []grant, acked, err error) {
	n := len(resources)
	keys := make([]string, 0, 3*n+1)
	for _, r := range resources {
		lock, waiters, queue := l.keys.LockKeys(tenant, r)
		keys = append(keys, lock, waiters, queue)
	}
	if index {
		keys = append(keys, l.indexKey(tenant))
	}
	outside := "1"
	if index {
		outside = "0"
	}
	args := make([]interface{}, 0, 6+n)
	args = append(args, owner, ttlMS, l.retentionArg, leaseMS, delayMS, outside)
	for _, r := range resources {
		args = append(args, r)
	}
	v, acked, err := l.rep.Run(ctx, scripts.AcquireSet, keys, args...)
	if err != nil {
		return res, nil, nil, scriptreply.Unavailable(err)
	}
	res, granted, err = decodeAcquireSet(resources, owner, v)
	if err != nil {
		return res, nil, nil, err
	}
	return res, granted, acked, nil
}

// decodeAcquireSet reads acquire_set.lua's reply:
// {1, now, (token, acquired_at, expires_at)...} or {0, now, (i, free_at, delayed)...}.
func decodeAcquireSet(resources []string, owner string, v interface{}) (leasegate.LockSetResult, []grant, error) {
	bad := func() (leasegate.LockSetResult, []grant, error) {
		return leasegate.LockSetResult{}, nil, fmt.Errorf("%w: acquire_set: %v", ErrBadReply, v)
	}
	arr, ok := v.([]interface{})
	if !ok || len(arr) < 2 || (len(arr)-2)%3 != 0 {
		return bad()
	}
	flag, ok1 := arr[0].(int64)
	nows, ok2 := arr[1].(string)
	now, err := strconv.ParseInt(nows, 10, 64)
	if !ok1 || !ok2 || err != nil {
		return bad()
	}
	nums := make([]int64, len(arr)-2)
	for i, f := range arr[2:] {
		s, ok := f.(string)
		if !ok {
			return bad()
		}
		if nums[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			return bad()
		}
	}
	switch {
	case flag == 1 && len(nums) == 3*len(resources):
		res := leasegate.LockSetResult{Acquired: true, Locks: make([]leasegate.Lock, len(resources))}
		var granted []grant
		for i, r := range resources {
			tok, acq, exp := nums[3*i], nums[3*i+1], nums[3*i+2]
			res.Locks[i] = leasegate.Lock{Resource: r, Owner: owner, Token: tok,
				AcquiredAt: time.UnixMilli(acq).UTC(), ExpiresAt: time.UnixMilli(exp).UTC()}
			if acq == now {
				granted = append(granted, grant{resource: r, token: tok})
			}
		}
		return res, granted, nil
	case flag == 0 && len(nums) > 0:
		res := leasegate.LockSetResult{Held: make([]leasegate.HeldMember, 0, len(nums)/3)}
		for i := 0; i < len(nums); i += 3 {
			m, free, delayed := nums[i], nums[i+1], nums[i+2]
			if m < 1 || m > int64(len(resources)) || (delayed != 0 && delayed != 1) {
				return bad()
			}
			res.Held = append(res.Held, leasegate.HeldMember{Resource: resources[m-1],
				RetryAfter: time.Duration(max(free-now, 0)) * time.Millisecond, Delayed: delayed == 1})
		}
		return res, nil, nil
	}
	return bad()
}

// acquireSetPerMember is a set's try on Redis Cluster: one member at a
// time in lock-key order, stopping at the first refusal or error, after
// which the leases this try granted are released again. Its tries stay
// outside the lines: a set taking places one member at a time could
// stand first in one member's line behind another set in the next, and
// the two would wait on each other (docs/lock-sets.md).
func (l *Locker) acquireSetPerMember(ctx context.Context, tenant string, req leasegate.LockSetRequest, ttlMS, delayMS int64, lease time.Duration) (leasegate.LockSetResult, error) {
	order := make([]int, len(req.Resources))
	keys := make([]string, len(req.Resources))
	for i, r := range req.Resources {
		order[i] = i
		keys[i], _, _ = l.keys.LockKeys(tenant, r)
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case keys[a] < keys[b]:
			return -1
		case keys[a] > keys[b]:
			return 1
		}
		return 0
	})
	out := leasegate.LockSetResult{Acquired: true, Locks: make([]leasegate.Lock, len(req.Resources))}
	var granted []grant
	for _, i := range order {
		r := req.Resources[i]
		res, g, acked, err := l.runAcquireSet(ctx, tenant, []string{r}, req.Owner, ttlMS, delayMS, lease.Milliseconds(), false)
		granted = append(granted, g...)
		if err == nil && acked != nil {
			err = acked
		}
		if err != nil {
			l.rollback(ctx, tenant, req.Owner, granted)
			if errors.Is(err, leasegate.ErrUnavailable) {
				// The outcome of the failed run is unknown: release the
				// member by owner too (any token), so that no lease of
				// this call is left behind.
				l.rollbackUnknown(ctx, tenant, req.Owner, r)
			}
			return leasegate.LockSetResult{}, err
		}
		if !res.Acquired {
			l.rollback(ctx, tenant, req.Owner, granted)
			return res, nil
		}
		out.Locks[i] = res.Locks[0]
		if len(g) > 0 {
			l.indexSecondStep(ctx, tenant, r)
		}
	}
	return out, nil
}

// rollback releases the leases a refused or failed set try granted, each
// by its token (so a lease granted to anyone else since is untouched), on
// a context that outlives the caller's, retrying a failed release. One
// that still fails ends by its TTL.
func (l *Locker) rollback(ctx context.Context, tenant, owner string, granted []grant) {
	for _, g := range granted {
		l.releaseRetrying(ctx, tenant, g.resource, owner, g.token)
	}
}

// rollbackUnknown releases owner's lease on resource, whatever its token:
// the try that may have granted it failed.
func (l *Locker) rollbackUnknown(ctx context.Context, tenant, owner, resource string) {
	l.releaseRetrying(ctx, tenant, resource, owner, 0)
}

func (l *Locker) releaseRetrying(ctx context.Context, tenant, resource, owner string, token int64) {
	for range rollbackTries {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_, err := l.release(uctx, tenant, resource, owner, token)
		cancel()
		if err == nil {
			return
		}
	}
}

// releaseSet ends owner's leases on resources: one script run on a single
// Redis and Sentinel, one release per member on Redis Cluster.
func (l *Locker) releaseSet(ctx context.Context, tenant, owner string, resources []string) (leasegate.LockSetRelease, error) {
	if err := checkSet(resources); err != nil {
		return leasegate.LockSetRelease{}, err
	}
	var out leasegate.LockSetRelease
	if l.secondStepIndex {
		for _, r := range resources {
			res, err := l.release(ctx, tenant, r, owner, 0)
			if err != nil {
				return out, err
			}
			if res == leasegate.Released {
				out.Released = append(out.Released, r)
			} else {
				out.NotHeld = append(out.NotHeld, r)
			}
		}
		return out, nil
	}
	n := len(resources)
	keys := make([]string, 0, 3*n+1)
	args := make([]interface{}, 0, 1+3*n)
	args = append(args, owner)
	for _, r := range resources {
		lock, waiters, queue := l.keys.LockKeys(tenant, r)
		keys = append(keys, lock, waiters, queue)
		args = append(args, r)
	}
	keys = append(keys, l.indexKey(tenant))
	for range resources {
		args = append(args, "")
	}
	for _, r := range resources {
		args = append(args, l.releaseChannel(tenant, r))
	}
	v, err := scripts.ReleaseSet.Run(ctx, l.rdb, keys, args...).Result()
	if err != nil {
		return out, scriptreply.Unavailable(err)
	}
	arr, ok := v.([]interface{})
	if !ok || len(arr) != n {
		return out, fmt.Errorf("%w: release_set: %v", ErrBadReply, v)
	}
	for i, f := range arr {
		x, ok := f.(int64)
		if !ok {
			return leasegate.LockSetRelease{}, fmt.Errorf("%w: release_set: %v", ErrBadReply, v)
		}
		if x >= 1 {
			out.Released = append(out.Released, resources[i])
			if l.cfg.OnRelease != nil {
				l.cfg.OnRelease(tenant, resources[i], time.Duration(x-1)*time.Millisecond)
			}
		} else {
			out.NotHeld = append(out.NotHeld, resources[i])
		}
	}
	return out, nil
}

// AcquireSet implements leasegate.LockSetService: every member's lease or
// none (docs/lock-sets.md). With req.Wait it waits until the whole set
// is free at once, holding none of it meanwhile. Any Redis error returns
// ErrUnavailable and never a grant.
func (s *Service) AcquireSet(ctx context.Context, tenant string, req leasegate.LockSetRequest) (leasegate.LockSetResult, error) {
	if req.Wait > 0 {
		return s.waiter.acquireSet(ctx, s.locks.Tenant(tenant), req, s.opTimeout)
	}
	return s.locks.acquireSet(ctx, tenant, req, 0)
}

// ReleaseSet implements leasegate.LockSetService.
func (s *Service) ReleaseSet(ctx context.Context, tenant, owner string, resources []string) (leasegate.LockSetRelease, error) {
	return s.locks.releaseSet(ctx, tenant, owner, resources)
}

// acquireSet is a waiting lock set: it tries the whole set, and while it
// is refused it stands in every member's line and sleeps until a member
// is released (it watches their lock keys here), the earliest refusing
// lease, lock delay or ticket ends, its tickets are due for renewal, or
// the wait is over.
func (w *Waiter) acquireSet(ctx context.Context, l *Locker, req leasegate.LockSetRequest, opTimeout time.Duration) (leasegate.LockSetResult, error) {
	if err := checkSet(req.Resources); err != nil {
		return leasegate.LockSetResult{}, err
	}
	queued, kept := false, false
	defer func() {
		if queued && !kept {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
			for _, r := range req.Resources {
				_ = l.leave(uctx, r, req.Owner)
			}
			cancel()
		}
	}()
	try := func() (leasegate.LockSetResult, error) {
		octx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		return l.acquireSet(octx, l.tenant, req, TicketLease)
	}
	if err := w.reserve(); err != nil {
		return leasegate.LockSetResult{}, err
	}
	defer w.unreserve()
	wake, unwatch := w.watchKeys(l, req.Resources)
	defer unwatch()

	end := time.Now().Add(req.Wait)
	deadline := time.NewTimer(req.Wait)
	defer deadline.Stop()
	sleep := time.NewTimer(time.Hour)
	defer sleep.Stop()
	waited := false
	for {
		res, err := try()
		at := time.Now()
		if err != nil || res.Acquired {
			res.Waited = waited
			return res, err
		}
		queued = true
		if time.Until(end) <= 0 {
			res.Waited = true
			return res, nil
		}
		waited = true
		d := time.Duration(0)
		for i, h := range res.Held {
			if i == 0 || h.RetryAfter < d {
				d = h.RetryAfter
			}
		}
		d = min(d+w.opts.ExpiryMargin, TicketRenew)
		if !w.Active() {
			d = min(d, w.opts.PollInterval)
		}
		sleep.Reset(d)
		select {
		case <-wake:
		case <-sleep.C:
		case <-deadline.C:
			// No new try once the wait is over: the latest refusal is the
			// answer, its times counted from when it came.
			for i := range res.Held {
				res.Held[i].RetryAfter = max(res.Held[i].RetryAfter-time.Since(at), 0)
			}
			res.Waited = true
			return res, nil
		case <-w.shutdown:
			// As every waiter: retry elsewhere, keeping the places in line.
			kept = true
			return leasegate.LockSetResult{Waited: true}, leasegate.ErrShuttingDown
		case <-ctx.Done():
			return leasegate.LockSetResult{Waited: true}, ctx.Err()
		}
		sleep.Stop()
	}
}

// reserve counts a waiting lock set against MaxWaiters.
func (w *Waiter) reserve() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.opts.MaxWaiters > 0 && w.count >= w.opts.MaxWaiters {
		return leasegate.ErrTooManyWaiters
	}
	w.count++
	return nil
}

func (w *Waiter) unreserve() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.count--
}

// watchKeys registers one wake channel under the lock key of every one
// of resources (as an event watcher, watch.go): a release of any wakes it.
func (w *Waiter) watchKeys(l *Locker, resources []string) (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	type watched struct{ key, channel string }
	ws := make([]watched, 0, len(resources))
	w.mu.Lock()
	if w.watchers == nil {
		w.watchers = map[string]map[chan struct{}]struct{}{}
	}
	for _, r := range resources {
		key := l.ReleaseMessage(r)
		channel := ""
		if w.shards != nil {
			channel = l.shardChannel(r)
		}
		if channel != "" {
			w.wantShardLocked(channel, key)
		}
		m := w.watchers[key]
		if m == nil {
			m = map[chan struct{}]struct{}{}
			w.watchers[key] = m
		}
		m[c] = struct{}{}
		ws = append(ws, watched{key, channel})
	}
	w.mu.Unlock()
	return c, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, x := range ws {
			if m := w.watchers[x.key]; m != nil {
				delete(m, c)
				if len(m) == 0 {
					delete(w.watchers, x.key)
				}
			}
			if x.channel != "" {
				w.dropShardLocked(x.channel)
			}
		}
	}
}
