package redislock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/outbox"
	"github.com/leasegate/leasegate/internal/scriptreply"
	"github.com/leasegate/leasegate/scripts"
)

// Operator is the domain's leasegate.LockOperator on Redis: the listing
// (over the tenant's lock index), forced releases and event watchers. It
// needs a plain client (pipelines, ZRANGEBYLEX), not only a Scripter.
type Operator struct {
	rdb    redis.Cmdable
	locks  *Locker
	waiter *Waiter
	opts   OperatorOptions
	out    *outbox.Writer
}

var _ leasegate.LockOperator = (*Operator)(nil)

// OperatorOptions configure an Operator; zero values take the defaults.
type OperatorOptions struct {
	// WatchPoll is how often a watcher re-reads the lease to see acquires
	// and renewals, which publish nothing (default DefaultWatchPoll).
	WatchPoll time.Duration
	// ExpiryMargin is added to expires_at before a watcher re-checks
	// (default DefaultWatchMargin), so an expiry is reported well within
	// 1 s.
	ExpiryMargin time.Duration
	// ForcedTTL is how long the forced key of a force-released lease
	// lives, for watchers (default 1 min).
	ForcedTTL time.Duration
	// OnExpired, when set, is told of each lease that ended without a
	// release: an index entry a listing or sweep prunes. Releases take
	// their entry out only where the scripts write the index, so it is
	// called only there (not on Redis Cluster, index.go).
	OnExpired func(tenant, resource string)
	// MaxListRounds bounds the index reads of one listing page when stale
	// entries are met (default 10): the page may then be short, with a
	// cursor.
	MaxListRounds int
	// Outbox writes every forced release to the webhook outbox stream
	// (keyspace.Outbox) as a force-release event, in the script that
	// releases (on Redis Cluster right after it), for package webhook to
	// deliver; off when no webhook is configured. OutboxMaxLen bounds the
	// stream (the same bound as abuse's events; default
	// outbox.DefaultMaxLen). A failed second step on Cluster is logged on
	// Log and counted by OutboxFailed.
	Outbox       bool
	OutboxMaxLen int64
	Log          *zap.Logger
	OutboxFailed func()
}

// The watchers' defaults, for the locks' and the elections' watchers.
const (
	DefaultWatchPoll   = time.Second
	DefaultWatchMargin = 50 * time.Millisecond
)

// NewOperator returns an Operator for the leases of l, with watchers woken
// by w's subscription (w nil: a Waiter without one; watchers then see
// releases only by polling). Each Redis call of a watcher is bounded by
// l's Config.OpTimeout.
func NewOperator(rdb redis.Cmdable, l *Locker, w *Waiter, opts OperatorOptions) *Operator {
	if w == nil {
		w = NewWaiter(nil, WaiterOptions{})
	}
	if opts.WatchPoll <= 0 {
		opts.WatchPoll = DefaultWatchPoll
	}
	if opts.ExpiryMargin <= 0 {
		opts.ExpiryMargin = DefaultWatchMargin
	}
	if opts.ForcedTTL <= 0 {
		opts.ForcedTTL = time.Minute
	}
	if opts.MaxListRounds <= 0 {
		opts.MaxListRounds = 10
	}
	out := outbox.New(rdb, l.keys, outbox.Options{On: opts.Outbox, MaxLen: opts.OutboxMaxLen,
		Log: opts.Log, Failed: opts.OutboxFailed})
	return &Operator{rdb: rdb, locks: l, waiter: w, opts: opts, out: out}
}

// List implements leasegate.LockOperator.
//
// It reads the index a page at a time (ZRANGEBYLEX ... LIMIT 0 n) and
// checks each entry against its lock key in one pipeline, reading the
// Redis clock after the leases: an entry whose lease is gone or past
// expires_at is left out and pruned. Cost: O(log N + page) per round.
func (o *Operator) List(ctx context.Context, tenant, prefix, cursor string, limit int) (leasegate.LockPage, error) {
	if limit <= 0 {
		limit = leasegate.DefaultLockPageSize
	}
	limit = min(limit, leasegate.MaxLockPageSize)
	idx := o.locks.keys.LockIndex(tenant)
	lo, hi := "-", "+"
	if prefix != "" {
		lo = "[" + prefix
		// Resource names are UTF-8, which never has the byte 0xFF.
		hi = "(" + prefix + "\xff"
	}
	if cursor != "" {
		if prefix != "" && cursor < prefix {
			cursor = ""
		} else {
			lo = "(" + cursor
		}
	}
	page := leasegate.LockPage{Items: []leasegate.HeldLock{}}
	last := ""
	for round := 0; round < o.opts.MaxListRounds && len(page.Items) < limit; round++ {
		want := limit - len(page.Items)
		names, err := o.rdb.ZRangeByLex(ctx, idx, &redis.ZRangeBy{Min: lo, Max: hi, Count: int64(want)}).Result()
		if err != nil {
			return leasegate.LockPage{}, scriptreply.Unavailable(err)
		}
		if len(names) == 0 {
			return page, nil
		}
		live, stale, err := o.check(ctx, tenant, names)
		if err != nil {
			return leasegate.LockPage{}, err
		}
		page.Items = append(page.Items, live...)
		if len(stale) > 0 {
			if err := o.prune(ctx, tenant, stale); err != nil {
				return leasegate.LockPage{}, err
			}
		}
		last = names[len(names)-1]
		lo = "(" + last
		if len(names) < want {
			return page, nil
		}
	}
	page.NextCursor = last
	return page, nil
}

// check reads the leases of names: the live ones, with their waiters, and
// the names whose lease is gone or expired.
func (o *Operator) check(ctx context.Context, tenant string, names []string) ([]leasegate.HeldLock, []string, error) {
	leases := make([]*redis.SliceCmd, len(names))
	waiters := make([]*redis.StringSliceCmd, len(names))
	var now *redis.TimeCmd
	_, err := o.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range names {
			k := o.locks.keys.Resource(tenant, n)
			leases[i] = p.HMGet(ctx, k.Lock(), "owner", "token", "acquired_at", "expires_at")
			waiters[i] = p.HVals(ctx, k.Waiters())
		}
		now = p.Time(ctx)
		return nil
	})
	if err != nil {
		return nil, nil, scriptreply.Unavailable(err)
	}
	nowMS := now.Val().UnixMilli()
	var live []leasegate.HeldLock
	var stale []string
	for i, n := range names {
		v := leases[i].Val()
		var lk leasegate.Lock
		ok := len(v) == 4 && v[0] != nil && v[3] != nil
		if ok {
			// HMGET answers owner first; decodeLock reads token,
			// acquired_at, expires_at, owner.
			var derr error
			lk, derr = decodeLock(n, []interface{}{v[1], v[2], v[3], v[0]})
			ok = derr == nil
		}
		if !ok || lk.ExpiresAt.UnixMilli() <= nowMS {
			stale = append(stale, n)
			continue
		}
		h := leasegate.HeldLock{Lock: lk}
		// Each live ticket (its deadline ahead) is one waiter; a
		// watcher's "w" counts none.
		for _, s := range waiters[i].Val() {
			if d, err := strconv.ParseInt(s, 10, 64); err == nil && d > nowMS {
				h.Waiters++
			}
		}
		live = append(live, h)
	}
	return live, stale, nil
}

// prune takes names out of the index, then re-reads their leases and
// puts back any that is held (expires_at after the Redis clock, read in
// the same pipeline) because it was granted meanwhile: a grant enters the
// index in its script (or right after it), so either it came before the
// re-read (and is put back) or its ZADD comes after the ZREM. An entry is
// thus never lost while its lease lives. The lock key's existence says
// nothing: it outlives its lease as the fence.
func (o *Operator) prune(ctx context.Context, tenant string, names []string) error {
	idx := o.locks.keys.LockIndex(tenant)
	members := make([]interface{}, len(names))
	for i, n := range names {
		members[i] = n
	}
	if err := o.rdb.ZRem(ctx, idx, members...).Err(); err != nil {
		return scriptreply.Unavailable(err)
	}
	leases := make([]*redis.SliceCmd, len(names))
	var now *redis.TimeCmd
	if _, err := o.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range names {
			leases[i] = p.HMGet(ctx, o.locks.keys.Resource(tenant, n).Lock(), "owner", "expires_at")
		}
		now = p.Time(ctx)
		return nil
	}); err != nil {
		return scriptreply.Unavailable(err)
	}
	nowMS := now.Val().UnixMilli()
	var back []redis.Z
	for i, n := range names {
		switch {
		case heldAt(leases[i].Val(), nowMS):
			back = append(back, redis.Z{Member: n})
		case o.opts.OnExpired != nil && !o.locks.secondStepIndex:
			o.opts.OnExpired(tenant, n)
		}
	}
	if len(back) > 0 {
		if err := o.rdb.ZAdd(ctx, idx, back...).Err(); err != nil {
			return scriptreply.Unavailable(err)
		}
	}
	return nil
}

// heldAt says whether an HMGET of owner and expires_at is a lease that is
// held at nowMS: both fields there and expires_at after nowMS, the test
// every script makes (a tombstone has only a token).
func heldAt(v []interface{}, nowMS int64) bool {
	if len(v) != 2 || v[0] == nil {
		return false
	}
	s, ok := v[1].(string)
	if !ok {
		return false
	}
	exp, err := strconv.ParseInt(s, 10, 64)
	return err == nil && exp > nowMS
}

// SweepResult is what a Sweep of a tenant's index found.
type SweepResult struct {
	// Held is how many entries had a live lease (expires_at after the
	// Redis clock) when their page was read: the tenant's held locks, as
	// far as the index knows them (on Redis Cluster it misses a grant
	// whose second step failed, OnIndexFailure).
	Held int
	// Removed is how many entries it pruned: leases that had ended.
	Removed int
}

// Sweep walks tenant's whole index in pages of batch and prunes the
// entries of leases that ended without a listing seeing them (releases
// and expiries leave their entry), counting the live ones on the way:
// the same check of every entry against its lock key and the Redis
// clock, so the count costs no extra command. A failed sweep returns
// what it found so far with the error.
func (o *Operator) Sweep(ctx context.Context, tenant string, batch int) (SweepResult, error) {
	if batch <= 0 {
		batch = 500
	}
	idx := o.locks.keys.LockIndex(tenant)
	lo := "-"
	var r SweepResult
	for {
		names, err := o.rdb.ZRangeByLex(ctx, idx, &redis.ZRangeBy{Min: lo, Max: "+", Count: int64(batch)}).Result()
		if err != nil {
			return r, scriptreply.Unavailable(err)
		}
		if len(names) == 0 {
			return r, nil
		}
		live, stale, err := o.check(ctx, tenant, names)
		if err != nil {
			return r, err
		}
		r.Held += len(live)
		if len(stale) > 0 {
			if err := o.prune(ctx, tenant, stale); err != nil {
				return r, err
			}
			r.Removed += len(stale)
		}
		if len(names) < batch {
			return r, nil
		}
		lo = "(" + names[len(names)-1]
	}
}

// ForceRelease implements leasegate.LockOperator. With
// OperatorOptions.Outbox the release is a force-release webhook event
// (with reason and meta's operator), written by the same script; the
// audit trail is package audit's.
func (o *Operator) ForceRelease(ctx context.Context, tenant, resource, reason string, meta leasegate.RequestMeta) (leasegate.Lock, error) {
	k := o.locks.keys.Resource(tenant, resource)
	keys := []string{k.Lock(), k.Waiters(), k.Forced(), k.Queue()}
	if !o.locks.secondStepIndex {
		// The index, then the outbox with webhooks (force_release.lua).
		keys = append(append(keys, o.locks.indexKey(tenant)), o.out.Keys()...)
	}
	var id string
	if o.out.On() {
		id = outbox.NewID()
	}
	v, err := scripts.ForceRelease.Run(ctx, o.rdb, keys,
		o.locks.releaseChannel(tenant, resource), o.opts.ForcedTTL.Milliseconds(), resource,
		id, tenant, meta.Operator, reason, o.out.MaxLen()).Result()
	if err != nil {
		return leasegate.Lock{}, scriptreply.Unavailable(err)
	}
	arr, ok := v.([]interface{})
	if !ok || len(arr) == 0 {
		return leasegate.Lock{}, fmt.Errorf("%w: force_release: %v", ErrBadReply, v)
	}
	flag, ok := arr[0].(int64)
	switch {
	case ok && flag == 0 && len(arr) == 1:
		return leasegate.Lock{}, leasegate.ErrLockNotHeld
	case ok && flag == 1 && len(arr) == 6:
		lk, err := decodeLock(resource, arr[1:5])
		if err != nil {
			return leasegate.Lock{}, err
		}
		now, ok := arr[5].(string)
		if !ok {
			return leasegate.Lock{}, fmt.Errorf("%w: force_release: %v", ErrBadReply, v)
		}
		o.out.After(ctx, "id", id, "type", outbox.ForceRelease, "tenant", tenant, "resource", resource,
			"at", now, "actor", meta.Operator, "reason", reason)
		return lk, nil
	}
	return leasegate.Lock{}, fmt.Errorf("%w: force_release: %v", ErrBadReply, v)
}
