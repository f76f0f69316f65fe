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

// WatchKey registers a wake channel for key, woken by every release
// message of key (on its shard channel channel when releases are sharded,
// "" otherwise) and when the subscription comes back: the event watchers
// of other engines on the lock engine's subscription (package election).
// The returned func removes it.
func (w *Waiter) WatchKey(key, channel string) (<-chan struct{}, func()) {
	return w.watchChan(key, channel)
}

// Done is closed when the Waiter closes (the gateway shuts down): event
// streams end then, and their clients reconnect.
func (w *Waiter) Done() <-chan struct{} { return w.shutdown }

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

// Watch implements leasegate.LockOperator.
func (o *Operator) Watch(ctx context.Context, tenant, resource string, events chan<- leasegate.LockEvent) error {
	l := o.locks.Tenant(tenant)
	k := o.locks.keys.Resource(tenant, resource)
	wake, unwatch := o.waiter.watchChan(k.Lock(), l.shardChannel(resource))
	defer unwatch()

	interest, leave, err := WatchInterest(ctx, o.rdb, k.Waiters(), o.opts.OpTimeout, o.opts.InterestTTL)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return scriptreply.Unavailable(err)
	}
	defer leave()

	read := func() (*leasegate.Lock, error) {
		c, cancel := context.WithTimeout(ctx, o.opts.OpTimeout)
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
		c, cancel := context.WithTimeout(ctx, o.opts.OpTimeout)
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

	prev, err := read()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if !send(leasegate.EventState, prev) {
		return nil
	}
	poll := time.NewTicker(o.opts.WatchPoll)
	defer poll.Stop()
	refresh := time.NewTicker(o.opts.InterestTTL / 3)
	defer refresh.Stop()
	expiry := time.NewTimer(time.Hour)
	defer expiry.Stop()
	for {
		expiry.Stop()
		if prev != nil {
			d := time.Until(prev.ExpiresAt) + o.opts.ExpiryMargin
			if d <= 0 {
				// Past expires_at by this clock but live by Redis's (the
				// clocks differ): the poll will see it end.
				d = o.opts.WatchPoll
			}
			expiry.Reset(d)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-o.waiter.shutdown:
			// The gateway shuts down: the stream ends, the client reconnects.
			return nil
		case <-refresh.C:
			if err := interest(); err != nil && ctx.Err() == nil {
				return scriptreply.Unavailable(err)
			}
			continue
		case <-wake:
		case <-poll.C:
		case <-expiry.C:
		}
		cur, err := read()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
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
				return nil
			}
		}
		switch {
		case cur != nil && (prev == nil || cur.Token != prev.Token):
			if !send(leasegate.EventAcquired, cur) {
				return nil
			}
		case cur != nil && !cur.ExpiresAt.Equal(prev.ExpiresAt):
			if !send(leasegate.EventRenewed, cur) {
				return nil
			}
		}
		prev = cur
	}
}

// WatchInterest enters a new event watcher among the waiters of
// waitersKey (watch.lua, for ttl), so that releases of the resource are
// published while it watches. renew enters it again (before ttl runs
// out); leave takes it out (interest.lua), also after ctx has ended.
// Each call is bounded by opTimeout. Used by the lock and election
// watchers alike.
func WatchInterest(ctx context.Context, rdb redis.Scripter, waitersKey string, opTimeout, ttl time.Duration) (renew func() error, leave func(), err error) {
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
		_ = scripts.Interest.Run(c, rdb, []string{waitersKey}, id).Err()
	}
	return renew, leave, nil
}
