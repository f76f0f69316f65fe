package redislock

import (
	"context"
	"time"

	"github.com/leasegate/leasegate"
)

// Waiting for something other than a lock (a semaphore's slot, say) on
// the same machinery as waiting acquires: the same subscription, the same
// FIFO queue per key, the same wake-ups on release messages, on every
// (re)confirmation of the subscription and at expiry. Only the attempt
// differs, so the caller passes it in.

// WaitTry is one attempt. done reports success (the wait ends); when not
// done, retryAfter is how long, by the store's clock, until the thing
// waited for frees itself (an expiry), so the head re-tries then.
type WaitTry func(ctx context.Context) (done bool, retryAfter time.Duration, err error)

// WaitOptions are one WaitFor.
type WaitOptions struct {
	// Key is the queue: the message its releases publish on the Waiter's
	// channel (e.g. a semaphore's permits key).
	Key string
	// Channel is the key's shard channel when its releases are sharded
	// (WaiterOptions.Shards), "" when they come on the Waiter's channel.
	Channel string
	// Wait is the longest the caller waits; 0 tries once.
	Wait time.Duration
	// OpTimeout bounds each try (default DefaultOpTimeout).
	OpTimeout time.Duration
	// Mine, when set, is asked once by a waiter that is not first in line:
	// true lets it try at once (the caller already holds what it asks
	// for, so trying takes nothing from those ahead of it).
	Mine func(ctx context.Context) (bool, error)
}

// WaitFor runs try in opts.Key's FIFO queue: only the head tries, and it
// re-tries when woken by a release of the key, when the subscription is
// (re)confirmed, at the expiry try reported, or every PollInterval while
// the subscription is down. It returns done from the last try; waited
// says the wait went past a first try. It ends without done when
// opts.Wait passes (err nil), with leasegate.ErrShuttingDown when the
// Waiter closes, and with ctx's error when ctx is done; a try's error
// ends it at once.
//
// As in Acquire, a try is never cut short by the end of the wait: each
// gets the whole OpTimeout, one in flight when opts.Wait passes is let
// finish and its outcome returned (so WaitFor may return up to one
// OpTimeout after opts.Wait), and no try starts once the wait is over,
// apart from the first.
func (w *Waiter) WaitFor(ctx context.Context, opts WaitOptions, try WaitTry) (done, waited bool, err error) {
	if opts.OpTimeout <= 0 {
		opts.OpTimeout = DefaultOpTimeout
	}
	bounded := func() (bool, time.Duration, error) {
		octx, cancel := context.WithTimeout(ctx, opts.OpTimeout)
		defer cancel()
		return try(octx)
	}
	if opts.Wait <= 0 {
		done, _, err := bounded()
		return done, false, err
	}
	end := time.Now().Add(opts.Wait)
	deadline := time.NewTimer(opts.Wait)
	defer deadline.Stop()

	wt, ok, err := w.enqueue(opts.Key, opts.Channel)
	if err != nil {
		return false, false, err
	}
	if !ok {
		done, _, err := bounded()
		return done, false, err
	}
	defer w.dequeue(wt)

	first := true
	if !w.isHead(wt) {
		if opts.Mine != nil {
			octx, cancel := context.WithTimeout(ctx, opts.OpTimeout)
			mine, err := opts.Mine(octx)
			cancel()
			if err != nil {
				return false, false, err
			}
			if mine {
				done, _, err := bounded()
				if err != nil || done {
					return done, false, err
				}
			}
		}
		first = false
	}

	var waitErr error
	switch w.loop(ctx, wt, deadline.C, func() (bool, time.Duration) {
		if !first && time.Until(end) <= 0 {
			// Woken as the wait ended: no new try it has no time for.
			done, waited = false, true
			return true, 0
		}
		ok, retryAfter, err := bounded()
		if err != nil || ok {
			done, waited, waitErr = ok, !first, err
			return true, 0
		}
		first = false
		return false, retryAfter
	}) {
	case waitStopped:
		return done, waited, waitErr
	case waitCancelled:
		return false, true, ctx.Err()
	case waitClosed:
		return false, true, leasegate.ErrShuttingDown
	default:
		return false, true, nil
	}
}

// QueuedOn is the number of waiters on key that have made their first
// check and are waiting (Queued, for a WaitFor key).
func (w *Waiter) QueuedOn(key string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	if q := w.queues[key]; q != nil {
		for e := q.l.Front(); e != nil; e = e.Next() {
			if e.Value.(*waiter).parked {
				n++
			}
		}
	}
	return n
}
