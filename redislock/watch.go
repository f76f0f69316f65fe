package redislock

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/scriptreply"
	"github.com/leasegate/leasegate/scripts"
)

// Event watchers (GET /locks/{resource}/events).
//
// A watcher is one goroutine per connection and holds a few hundred bytes:
// its last view of the lease, a timer, and a wake channel registered with
// the Waiter under the lock key. It re-reads the lease (Status, and the
// forced key after a lease ended) when
//   - the release channel (or the resource's shard channel, subscribed
//     while the watcher lives) carries a release of the resource: the watcher
//     is entered among the resource's waiters (watch.lua), so releases
//     publish, as they do only while someone waits;
//   - the lease's expires_at passes (a timer at expires_at plus a margin);
//   - every poll interval (acquires and renewals publish nothing);
//   - the subscription comes back after an outage.
// and reports the difference as events.

// watchChan registers a wake channel for key, whose releases come on
// shard channel channel ("" when not sharded); the returned func removes
// it.
func (w *Waiter) watchChan(key, channel string) (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	w.mu.Lock()
	if w.shards == nil {
		channel = ""
	}
	if channel != "" {
		w.wantShardLocked(channel, key)
	}
	if w.watchers == nil {
		w.watchers = map[string]map[chan struct{}]struct{}{}
	}
	m := w.watchers[key]
	if m == nil {
		m = map[chan struct{}]struct{}{}
		w.watchers[key] = m
	}
	m[c] = struct{}{}
	w.mu.Unlock()
	return c, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(m, c)
		if len(m) == 0 {
			delete(w.watchers, key)
		}
		if channel != "" {
			w.dropShardLocked(channel)
		}
	}
}

// wakeWatchersLocked wakes the watchers of key, or of every key when key
// is ""; w.mu must be held.
func (w *Waiter) wakeWatchersLocked(key string) {
	if key == "" {
		for _, m := range w.watchers {
			for c := range m {
				signal(c)
			}
		}
		return
	}
	for c := range w.watchers[key] {
		signal(c)
	}
}

// Watched is how many watch registrations this Waiter holds (for tests
// and /metrics): it returns to 0 when every watcher has gone.
func (w *Waiter) Watched() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, m := range w.watchers {
		n += len(m)
	}
	return n
}

// WatchSpec is what an event watcher watches and how often it looks:
// the lock watchers' (Operator.Watch) and the election watchers'
// (package election).
type WatchSpec struct {
	// Key is the lock key, whose releases wake the watcher; Channel is
	// its shard channel when releases are sharded ("" otherwise).
	Key, Channel string
	// Waiters is the waiters key the watcher is entered in (watch.lua),
	// so that releases publish while it watches.
	Waiters string
	// OpTimeout bounds each Redis call of the watcher's own; Poll is how
	// often the state is read again with no wake-up.
	OpTimeout, Poll time.Duration
}

// watchEntryTTL is how long a watcher's entry among the waiters lives
// unless entered again, which it is every third of it.
const watchEntryTTL = 30 * time.Second

// NoTimer is what a watch step returns when nothing it saw ends by
// itself (no lease).
const NoTimer time.Duration = -1

// Watch runs an event watcher of spec.Key: it registers a wake channel,
// enters the watcher among the waiters, and calls step (first true the
// first time) at once, then whenever a release or the subscription's
// return wakes it, every spec.Poll, and when the time step returned
// passes (NoTimer: none). It ends with nil when ctx ends or step says
// to stop; with leasegate.ErrShuttingDown when the Waiter closes (the
// gateway shuts down: the stream tells the client to reconnect); with
// step's error, or unavailable when the entry cannot be renewed, unless
// ctx has ended.
func (w *Waiter) Watch(ctx context.Context, rdb redis.Scripter, spec WatchSpec, step func(first bool) (next time.Duration, more bool, err error)) error {
	wake, unwatch := w.watchChan(spec.Key, spec.Channel)
	defer unwatch()
	renew, leave, err := watchInterest(ctx, rdb, spec.Waiters, spec.OpTimeout, watchEntryTTL)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return scriptreply.Unavailable(err)
	}
	defer leave()

	poll := time.NewTicker(spec.Poll)
	defer poll.Stop()
	refresh := time.NewTicker(watchEntryTTL / 3)
	defer refresh.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for first := true; ; first = false {
		next, more, err := step(first)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if err != nil || !more {
			return nil
		}
		timer.Stop()
		if next >= 0 {
			timer.Reset(next)
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-w.shutdown:
				return leasegate.ErrShuttingDown
			case <-refresh.C:
				if err := renew(); err != nil && ctx.Err() == nil {
					return scriptreply.Unavailable(err)
				}
			case <-wake:
				break wait
			case <-poll.C:
				break wait
			case <-timer.C:
				break wait
			}
		}
	}
}

// Watch implements leasegate.LockOperator.
func (o *Operator) Watch(ctx context.Context, tenant, resource string, events chan<- leasegate.LockEvent) error {
	l := o.locks.Tenant(tenant)
	k := o.locks.keys.Resource(tenant, resource)
	read := func() (*leasegate.Lock, error) {
		c, cancel := context.WithTimeout(ctx, o.locks.cfg.OpTimeout)
		defer cancel()
		lk, err := l.status(c, l.tenant, resource)
		if errors.Is(err, leasegate.ErrLockNotHeld) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return &lk, nil
	}
	forced := func(token int64) bool {
		c, cancel := context.WithTimeout(ctx, o.locks.cfg.OpTimeout)
		defer cancel()
		n, err := o.rdb.Get(c, k.Forced()).Int64()
		return err == nil && n == token
	}
	send := func(kind leasegate.LockEventKind, lk *leasegate.Lock) bool {
		select {
		case events <- leasegate.LockEvent{Kind: kind, Lock: lk, At: time.Now().UTC()}:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var prev *leasegate.Lock
	// next is when prev's lease ends by itself, plus a margin.
	next := func() time.Duration {
		if prev == nil {
			return NoTimer
		}
		if d := time.Until(prev.ExpiresAt) + o.opts.ExpiryMargin; d > 0 {
			return d
		}
		// Past expires_at by this clock but live by Redis's (the clocks
		// differ): the poll will see it end.
		return o.opts.WatchPoll
	}
	spec := WatchSpec{Key: k.Lock(), Channel: l.shardChannel(resource), Waiters: k.Waiters(),
		OpTimeout: o.locks.cfg.OpTimeout, Poll: o.opts.WatchPoll}
	return o.waiter.Watch(ctx, o.rdb, spec, func(first bool) (time.Duration, bool, error) {
		cur, err := read()
		if err != nil {
			return 0, false, err
		}
		if first {
			prev = cur
			return next(), send(leasegate.EventState, cur), nil
		}
		if prev != nil && (cur == nil || cur.Token != prev.Token) {
			kind := leasegate.EventReleased
			switch {
			case forced(prev.Token):
				kind = leasegate.EventForceReleased
			case !time.Now().Before(prev.ExpiresAt):
				kind = leasegate.EventExpired
			}
			if !send(kind, prev) {
				return 0, false, nil
			}
		}
		switch {
		case cur != nil && (prev == nil || cur.Token != prev.Token):
			if !send(leasegate.EventAcquired, cur) {
				return 0, false, nil
			}
		case cur != nil && !cur.ExpiresAt.Equal(prev.ExpiresAt):
			if !send(leasegate.EventRenewed, cur) {
				return 0, false, nil
			}
		}
		prev = cur
		return next(), true, nil
	})
}

// watchInterest enters a new event watcher among the waiters of
// waitersKey (watch.lua, for ttl), so that releases of the resource are
// published while it watches. renew enters it again (before ttl runs
// out); leave takes it out (unwatch.lua), also after ctx has ended.
// Each call is bounded by opTimeout.
func watchInterest(ctx context.Context, rdb redis.Scripter, waitersKey string, opTimeout, ttl time.Duration) (renew func() error, leave func(), err error) {
	id := newWatcherID()
	renew = func() error {
		c, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		return scripts.Watch.Run(c, rdb, []string{waitersKey}, id, ttl.Milliseconds()).Err()
	}
	if err := renew(); err != nil {
		return nil, nil, err
	}
	leave = func() {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
		defer cancel()
		_ = scripts.Unwatch.Run(c, rdb, []string{waitersKey}, id).Err()
	}
	return renew, leave, nil
}
