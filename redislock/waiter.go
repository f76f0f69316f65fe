package redislock

import (
	"container/list"
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Waiting acquires (docs/waiting.md).
//
// A Waiter holds ONE pub/sub subscription per gateway process on the
// channel the release script publishes to, and fans each release out to
// the in-process waiters of that lock key. The ORDER of waiters is not
// the Waiter's: it is the name's line in Redis (scripts/prelude/line.lua),
// the same for every gateway. A release names the owners Redis grants
// next, and the Waiter wakes exactly its waiters of those owners. Per
// lock key it keeps its waiters in arrival order only to pick who re-tries
// at the holder's expiry (the local head). Every waiter also tries every
// TicketRenew, which renews its ticket.
//
// No lost wake-up: a waiter joins its local queue BEFORE its first try,
// which takes its ticket in line. A release published after that try is
// either delivered on the subscription (which wakes the waiters it names), or
// was published while the subscription was not confirmed active; every
// confirmation of the subscription (the first one and each after a
// reconnect) wakes every local head to re-check. While the subscription
// is not active, heads also re-check every PollInterval. A waiter that
// leaves the line while first in it publishes as a release does
// (leave.lua), so the next in line, on any gateway, is woken.
//
// On Redis Cluster >= 7 (WaiterOptions.Shards) the keys whose waiters
// name a shard channel are woken by sharded subscriptions instead, one
// per master, holding only the channels of the resources this gateway
// waits on (shards.go); the rules above hold per channel.
//
// Expiry needs no keyspace notifications: a contended try returns the
// holder's remaining time by the Redis clock, and the head sleeps at most
// that long plus ExpiryMargin before it tries again.

// Subscriber opens pub/sub subscriptions; *redis.Client,
// *redis.ClusterClient and redis.UniversalClient all are one.
type Subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Defaults of WaiterOptions.
const (
	DefaultExpiryMargin   = 10 * time.Millisecond
	DefaultPollInterval   = 500 * time.Millisecond
	DefaultHealthInterval = 15 * time.Second
	DefaultOpTimeout      = 5 * time.Second
)

// stillDownEvery is how often an outage of the subscription is logged
// again while it lasts (every retry is logged at debug level).
const stillDownEvery = time.Minute

// WaiterOptions configure a Waiter. Zero values take the defaults.
type WaiterOptions struct {
	// Channel is the release channel (Config.ReleaseChannel of the
	// Lockers whose releases should wake waiters).
	Channel string
	// ExpiryMargin is added to the holder's remaining time before a head
	// re-tries at expiry, to absorb clock-rate drift and rounding.
	ExpiryMargin time.Duration
	// PollInterval is how often heads re-check while the subscription is
	// not active (starting, reconnecting, or no Subscriber at all).
	PollInterval time.Duration
	// MaxWaiters caps the acquires waiting at once on this Waiter (locks
	// and semaphores together); one more is refused with
	// leasegate.ErrTooManyWaiters instead of queued. 0: no cap.
	MaxWaiters int
	// HealthInterval: with no traffic for this long the subscription is
	// PINGed; no answer within another interval counts as a dead
	// connection, which is reopened.
	HealthInterval time.Duration
	// Shards, when set (a *redis.ClusterClient on Redis >= 7), subscribes
	// the shard channel of every key a local waiter or watcher names
	// (WaitOptions.Channel; Config.ShardedReleases) with
	// SSUBSCRIBE on the master of its slot, while it has one (shards.go).
	// Channel, if set too, is still subscribed: releases of gateways that
	// publish classically (a rolling upgrade) still wake waiters here.
	Shards ShardRouter
	// OnMessage, when set, is told about each release message received,
	// sharded or on Channel (for /metrics). It runs on the subscription's
	// reader and must not block.
	OnMessage func(sharded bool)
	// OnShardChannels, when set, is told how many shard channels are
	// confirmed subscribed whenever that changes (for /metrics). It runs
	// under the Waiter's lock and must not block.
	OnShardChannels func(n int)
	// Log receives subscription errors: a warning when the subscription
	// is lost (or cannot be opened), again at most once a minute while it
	// stays down, each retry at debug level, and an info record when it
	// is back. Nil logs nothing.
	Log *zap.Logger
}

// Waiter runs waiting acquires. It is safe for concurrent use. Close it at
// shutdown: every waiter is answered at once with
// leasegate.ErrShuttingDown (waitClosed: the one place a shutdown ends
// waits), and every event watcher ends with it. The waiters keep their
// places in line for TicketLease, so the same owner retrying at once
// through another gateway keeps its turn.
type Waiter struct {
	sub  Subscriber
	opts WaiterOptions
	log  *zap.Logger

	mu     sync.Mutex
	queues map[string]*queue // by lock key
	active bool              // subscription confirmed and healthy
	ps     *redis.PubSub
	closed bool
	count  int
	// watchers are the event watchers of each lock key (watch.go).
	watchers map[string]map[chan struct{}]struct{}

	shutdown chan struct{} // closed by Close
	done     chan struct{} // closed when the subscription loop has ended
	// back (buffered 1) ends the subscription loop's backoff at once:
	// Redis answers again (StoreBack).
	back chan struct{}
	// ctx is the subscription's, cancelled by Close so that a dial to an
	// unreachable Redis does not hold Close up.
	ctx    context.Context
	cancel context.CancelFunc

	// shards are the sharded subscriptions (shards.go); nil without
	// WaiterOptions.Shards.
	shards *shardState

	// The outage being logged; touched only by the subscription loop.
	downSince time.Time // zero while the subscription is up (or never failed)
	retries   int
	warnedAt  time.Time
}

// queue is the local waiters of one lock key, oldest first.
type queue struct {
	l list.List // of *waiter, oldest first
	// owners are the waiters of each owner (two waits of one owner share
	// its ticket).
	owners map[string][]*waiter
	// channel is the key's shard channel ("" when not sharded).
	channel string
}

type waiter struct {
	key string
	// owner is the owner whose ticket the waiter holds in the key's line:
	// a wake-up that names it wakes this waiter.
	owner  string
	parked bool          // has made its first check and is waiting
	wake   chan struct{} // buffered(1): a pending wake is never lost
	elem   *list.Element
}

// NewWaiter starts a Waiter. With sub nil (or no Channel) there is no
// subscription: heads re-check every PollInterval and at expiry, which is
// correct but slower to notice releases.
func NewWaiter(sub Subscriber, opts WaiterOptions) *Waiter {
	if opts.ExpiryMargin <= 0 {
		opts.ExpiryMargin = DefaultExpiryMargin
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = DefaultHealthInterval
	}
	w := &Waiter{
		sub:      sub,
		opts:     opts,
		log:      opts.Log,
		queues:   map[string]*queue{},
		shutdown: make(chan struct{}),
		done:     make(chan struct{}),
		back:     make(chan struct{}, 1),
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	if w.log == nil {
		w.log = zap.NewNop()
	}
	if opts.Shards != nil {
		w.startShards()
	}
	if sub == nil || opts.Channel == "" {
		close(w.done)
		return w
	}
	go w.run()
	return w
}

// Close answers every waiter leasegate.ErrShuttingDown and stops the
// subscription. It is safe to
// call more than once.
func (w *Waiter) Close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.done
		return
	}
	w.closed = true
	close(w.shutdown)
	w.cancel()
	ps := w.ps
	w.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
	}
	<-w.done
	if w.shards != nil {
		<-w.shards.done
	}
}

func (w *Waiter) received(sharded bool) {
	if w.opts.OnMessage != nil {
		w.opts.OnMessage(sharded)
	}
}

// listening reports whether a release of wt's key would reach this
// Waiter: its shard channel is confirmed, or (not sharded) the
// subscription is.
func (w *Waiter) listening(wt *waiter) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if q := w.queues[wt.key]; q != nil && q.channel != "" && w.shards != nil {
		return w.shardListeningLocked(q.channel)
	}
	return w.active
}

// Active reports whether the subscription is confirmed and healthy.
func (w *Waiter) Active() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.active
}

// Waiting is the number of acquires waiting in this Waiter.
func (w *Waiter) Waiting() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count
}

// Queued is the number of waiters on resource in l's tenant that have
// made their first check and are waiting.
func (w *Waiter) Queued(l *Locker, resource string) int {
	return w.QueuedOn(l.ReleaseMessage(resource))
}

func (w *Waiter) park(wt *waiter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt.parked = true
}

// run keeps one subscription open until Close.
func (w *Waiter) run() {
	defer close(w.done)
	backoff := 50 * time.Millisecond
	for {
		ps := w.sub.Subscribe(w.ctx, w.opts.Channel)
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			_ = ps.Close()
			return
		}
		w.ps = ps
		w.mu.Unlock()

		confirmed, err := w.consume(ps)
		_ = ps.Close()

		w.mu.Lock()
		w.ps = nil
		w.active = false
		// Heads parked while the subscription was active sleep until the
		// holder's expiry; wake them so they re-check and poll from now
		// on, or a release published while it is down strands them.
		w.wakeHeadsLocked()
		closed := w.closed
		w.mu.Unlock()
		if closed {
			return
		}
		w.logDown(confirmed, err)
		if confirmed {
			backoff = 50 * time.Millisecond
		}
		select {
		case <-w.shutdown:
			return
		case <-time.After(backoff):
		case <-w.back:
			backoff = 25 * time.Millisecond
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

// consume reads the subscription until it fails. confirmed says whether it
// was ever confirmed active.
func (w *Waiter) consume(ps *redis.PubSub) (confirmed bool, err error) {
	ctx := w.ctx
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(ctx, w.opts.HealthInterval)
		if err != nil {
			if isTimeout(err) && !pinged {
				pinged = true
				if err := ps.Ping(ctx); err != nil {
					return confirmed, err
				}
				continue
			}
			return confirmed, err
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Channel == w.opts.Channel {
				confirmed = true
				w.setActive()
			}
		case *redis.Message:
			w.received(false)
			w.notify(m.Payload)
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// setActive marks the subscription live and wakes every head: releases
// published while it was not active were not delivered.
func (w *Waiter) setActive() {
	if !w.downSince.IsZero() {
		w.log.Info("release subscription is back; waiters are woken by releases again",
			zap.String("channel", w.opts.Channel), zap.Duration("down_for", time.Since(w.downSince)),
			zap.Int("retries", w.retries))
		w.downSince, w.retries = time.Time{}, 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.active = true
	w.wakeHeadsLocked()
}

// logDown logs a failed subscription: a warning at the start of an
// outage (lost, or never opened), then each retry at debug level and a
// warning at most every stillDownEvery, so an unreachable Redis does not
// fill the log with one line per retry.
func (w *Waiter) logDown(confirmed bool, err error) {
	now := time.Now()
	ch := zap.String("channel", w.opts.Channel)
	switch {
	case confirmed || w.downSince.IsZero():
		msg := "release subscription lost; waiters poll until it is back"
		if !confirmed {
			msg = "could not open the release subscription; waiters poll until it is open"
		}
		w.downSince, w.retries, w.warnedAt = now, 0, now
		w.log.Warn(msg, ch, zap.Error(err))
	case now.Sub(w.warnedAt) >= stillDownEvery:
		w.retries++
		w.warnedAt = now
		w.log.Warn("release subscription still down; waiters poll until it is back", ch,
			zap.Duration("down_for", now.Sub(w.downSince)), zap.Int("retries", w.retries), zap.Error(err))
	default:
		w.retries++
		w.log.Debug("release subscription: retrying", ch, zap.Int("retries", w.retries), zap.Error(err))
	}
}

// WakeAll wakes the head of every queue and every watcher to re-check at
// once: the store has gone down (internal/storehealth), and a waiter whose
// next try meets it is answered unavailable now rather than at its retry
// time. The head that fails leaves its queue and wakes the next, which
// fails as fast.
func (w *Waiter) WakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wakeHeadsLocked()
}

// StoreBack tells the Waiter that Redis answers again after an outage
// (internal/storehealth): the subscriptions are reopened now rather than
// at the end of their backoff (up to 2 s), so waiters are woken by
// releases again as soon as Redis is back.
func (w *Waiter) StoreBack() {
	signal(w.back)
	if w.shards != nil {
		signal(w.shards.back)
	}
}

// wakeHeadsLocked wakes the head of every queue; w.mu must be held.
func (w *Waiter) wakeHeadsLocked() {
	for _, q := range w.queues {
		if f := q.l.Front(); f != nil {
			signal(f.Value.(*waiter).wake)
		}
	}
	w.wakeWatchersLocked("")
}

// notify hands a wake-up message to the waiters it names: the name's
// release message, then, one a line, the owners of the live tickets Redis
// grants next (line_wake in scripts/prelude/line.lua). Only the waiters
// of those owners are woken, whichever of them is first here; a message
// that names none (nobody in line) wakes only the key's event watchers.
// A message without the owners' part (a proclaim) wakes the key's local
// head as well.
func (w *Waiter) notify(msg string) {
	key, owners, named := strings.Cut(msg, "\n")
	w.mu.Lock()
	defer w.mu.Unlock()
	if !named {
		w.wakeKeyLocked(key)
		return
	}
	w.wakeWatchersLocked(key)
	q := w.queues[key]
	if q == nil || owners == "" {
		return
	}
	for owner := range strings.SplitSeq(owners, "\n") {
		for _, wt := range q.owners[owner] {
			signal(wt.wake)
		}
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// enqueue adds a waiter of owner for key, whose releases come on shard
// channel channel ("" or no WaiterOptions.Shards: on the Waiter's
// channel); ok is false after Close.
func (w *Waiter) enqueue(key, channel, owner string) (wt *waiter, ok bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, false, nil
	}
	if w.opts.MaxWaiters > 0 && w.count >= w.opts.MaxWaiters {
		return nil, false, leasegate.ErrTooManyWaiters
	}
	q := w.queues[key]
	if q == nil {
		if w.shards == nil {
			channel = ""
		}
		q = &queue{channel: channel, owners: map[string][]*waiter{}}
		w.queues[key] = q
		if channel != "" {
			w.wantShardLocked(channel, key)
		}
	}
	wt = &waiter{key: key, owner: owner, wake: make(chan struct{}, 1)}
	wt.elem = q.l.PushBack(wt)
	q.owners[owner] = append(q.owners[owner], wt)
	w.count++
	return wt, true, nil
}

// dequeue removes wt; if it was the head, the new head is woken so it
// tries at once (hand-off).
func (w *Waiter) dequeue(wt *waiter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queues[wt.key]
	if q == nil || wt.elem == nil {
		return
	}
	wasHead := q.l.Front() == wt.elem
	q.l.Remove(wt.elem)
	if ws := slices.DeleteFunc(q.owners[wt.owner], func(x *waiter) bool { return x == wt }); len(ws) > 0 {
		q.owners[wt.owner] = ws
	} else {
		delete(q.owners, wt.owner)
	}
	wt.elem = nil
	w.count--
	if q.l.Len() == 0 {
		delete(w.queues, wt.key)
		if q.channel != "" {
			w.dropShardLocked(q.channel)
		}
		return
	}
	if wasHead {
		signal(q.l.Front().Value.(*waiter).wake)
	}
}

func (w *Waiter) isHead(wt *waiter) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queues[wt.key]
	return q != nil && q.l.Front() == wt.elem
}

// WaitRequest is one waiting acquire.
type WaitRequest struct {
	Resource string
	Owner    string
	TTL      time.Duration
	// LockDelay is the grant's lock delay (leasegate.AcquireRequest).
	LockDelay time.Duration
	// Wait is the longest the caller waits for the lease; 0 tries once.
	Wait time.Duration
	// OpTimeout bounds each Redis call (default DefaultOpTimeout). A try
	// in flight when the wait ends is not cut short (see Acquire).
	OpTimeout time.Duration
}

// Acquire takes the lease on req.Resource in l's tenant, waiting up to
// req.Wait in the resource's line (scripts/prelude/line.lua) while another owner
// holds it or others stand ahead. It returns the contended result when
// the wait times out without the lease, leasegate.ErrShuttingDown when
// the Waiter closes, and ctx's error as soon as ctx is done (the caller
// went away). A Redis error ends the wait at once with ErrUnavailable: a
// lease is never reported granted after an error.
//
// The answer is always true (WaitFor): a try in flight when the wait
// ends is let finish and its own outcome is the answer, so the answer
// may come up to one OpTimeout after req.Wait. Were the try abandoned, it
// could still run in Redis and grant the lease to an owner told "not
// granted" (docs/safety.md).
func (w *Waiter) Acquire(ctx context.Context, l *Locker, req WaitRequest) (leasegate.AcquireResult, error) {
	var out, last leasegate.AcquireResult
	var lastAt time.Time
	done, waited, err := w.WaitFor(ctx, WaitOptions{
		Key: l.ReleaseMessage(req.Resource), Channel: l.shardChannel(req.Resource), Owner: req.Owner,
		Wait: req.Wait, OpTimeout: req.OpTimeout,
		Leave: func(ctx context.Context) error { return l.leave(ctx, req.Resource, req.Owner) },
	}, func(ctx context.Context, lease time.Duration) (bool, time.Duration, error) {
		res, err := l.acquire(ctx, l.tenant, req.Resource, req.Owner, req.TTL, req.LockDelay, lease)
		if err != nil || res.Acquired {
			out = res
			return res.Acquired, 0, err
		}
		last, lastAt = res, time.Now()
		return false, res.RetryAfter, nil
	})
	switch {
	case err != nil:
		return leasegate.AcquireResult{Waited: waited}, err
	case done:
		out.Waited = waited
		return out, nil
	}
	last.RetryAfter = max(last.RetryAfter-time.Since(lastAt), 0)
	last.Waited = waited
	return last, nil
}

// waitEnd is why a wait's loop ended.
type waitEnd int

const (
	// waitStopped: a try ended the wait; it has the answer.
	waitStopped waitEnd = iota
	// waitOver: the wait's time ran out.
	waitOver
	// waitCancelled: ctx is done (the caller went away).
	waitCancelled
	// waitClosed: the Waiter was closed (the gateway shuts down). The
	// wait is answered leasegate.ErrShuttingDown, 503 with Retry-After,
	// so that the caller retries through another gateway at once; its
	// place in line is kept.
	waitClosed
)

// loop is the part of a wait after enqueue: it calls try, which either
// stops the wait (true) or reports how long, by the store's clock, until
// the thing waited for frees itself; then it parks until woken (a
// release, a (re)confirmed subscription, a hand-off), its retry time,
// the deadline, Close or ctx, and tries again. The local head
// re-tries at the reported time plus ExpiryMargin (at most PollInterval
// while the subscription is down); every waiter re-tries at least every
// TicketRenew, which keeps its place in line.
func (w *Waiter) loop(ctx context.Context, wt *waiter, deadline <-chan time.Time, try func() (stop bool, retryAfter time.Duration)) waitEnd {
	var sleep *time.Timer
	defer func() {
		if sleep != nil {
			sleep.Stop()
		}
	}()
	for {
		stop, retryAfter := try()
		if stop {
			return waitStopped
		}
		d := TicketRenew
		if w.isHead(wt) {
			d = min(d, retryAfter+w.opts.ExpiryMargin)
			if !w.listening(wt) {
				d = min(d, w.opts.PollInterval)
			}
		}
		if sleep == nil {
			sleep = time.NewTimer(d)
		} else {
			sleep.Reset(d)
		}
		if !wt.parked {
			w.park(wt)
		}
		select {
		case <-wt.wake:
		case <-sleep.C:
		case <-deadline:
			return waitOver
		case <-w.shutdown:
			return waitClosed
		case <-ctx.Done():
			return waitCancelled
		}
		sleep.Stop() // Go 1.23+ timers: no stale tick after Stop or Reset
	}
}
