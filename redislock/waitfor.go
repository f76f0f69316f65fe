package redislock

import (
	"context"
	"time"

	"github.com/leasegate/leasegate"
)

// Waiting for a lock, and for something other than a lock (a
// semaphore's slot, say), on the same machinery: the same subscription,
// the same line per name in Redis (the try takes and renews the place),
// the same wake-ups on release messages, on every (re)confirmation of the
// subscription and at expiry. Only the attempt differs, so the caller
// passes it in.

// WaitTry is one attempt. lease is the lease of the caller's ticket in
// the name's line (TicketLease), 0 for a single try that does not wait
// and so takes no place in line. done reports success (the wait ends);
// when not done, retryAfter is how long, by the store's clock, until the
// thing waited for frees itself (an expiry), so the head re-tries then.
type WaitTry func(ctx context.Context, lease time.Duration) (done bool, retryAfter time.Duration, err error)

// WaitOptions are one WaitFor.
type WaitOptions struct {
	// Key is the local queue: the message its releases publish on the
	// Waiter's channel (e.g. a semaphore's permits key).
	Key string
	// Channel is the key's shard channel when its releases are sharded
	// (WaiterOptions.Shards), "" when they come on the Waiter's channel.
	Channel string
	// Owner is the caller's owner: a wake-up naming it wakes this wait.
	Owner string
	// Wait is the longest the caller waits; 0 tries once.
	Wait time.Duration
	// OpTimeout bounds each try (default DefaultOpTimeout).
	OpTimeout time.Duration
	// Leave takes the caller's ticket out of the line (leave.lua). It is
	// called when the wait ends without success because its time ran
	// out, the caller went away or a try failed; never after Close,
	// whose waiters keep their place for TicketLease.
	Leave func(ctx context.Context) error
}

// WaitFor runs try in the name's line: every waiter tries at once (which
// takes its place in line), then again when woken by a release of the
// key (the local head), when the subscription is (re)confirmed, at the
// expiry try reported, every PollInterval while the subscription is down,
// and at least every TicketRenew. It returns done from the last try;
// waited says the wait went past a first try. It ends without done when
// opts.Wait passes (err nil), with leasegate.ErrShuttingDown when the
// Waiter closes (its place in line kept), and with ctx's error when ctx
// is done; a try's error ends it at once.
//
// A try is never cut short by the end of the wait: each gets the whole
// OpTimeout, one in flight when opts.Wait passes is let finish and its
// outcome returned (so WaitFor may return up to one OpTimeout after
// opts.Wait), and no try starts once the wait is over, apart from the
// first.
func (w *Waiter) WaitFor(ctx context.Context, opts WaitOptions, try WaitTry) (done, waited bool, err error) {
	if opts.OpTimeout <= 0 {
		opts.OpTimeout = DefaultOpTimeout
	}
	bounded := func(lease time.Duration) (bool, time.Duration, error) {
		octx, cancel := context.WithTimeout(ctx, opts.OpTimeout)
		defer cancel()
		return try(octx, lease)
	}
	if opts.Wait <= 0 {
		done, _, err := bounded(0)
		return done, false, err
	}
	end := time.Now().Add(opts.Wait)
	deadline := time.NewTimer(opts.Wait)
	defer deadline.Stop()

	wt, ok, err := w.enqueue(opts.Key, opts.Channel, opts.Owner)
	if err != nil {
		return false, false, err
	}
	if !ok {
		done, _, err := bounded(0)
		return done, false, err
	}
	defer w.dequeue(wt)

	first, queued := true, false
	var tryErr error
	how := w.loop(ctx, wt, deadline.C, func() (bool, time.Duration) {
		if !first && time.Until(end) <= 0 {
			// Woken as the wait ended: no new try it has no time for.
			return true, 0
		}
		ok, retryAfter, err := bounded(TicketLease)
		if err != nil || ok {
			done, tryErr = ok, err
			return true, 0
		}
		first, queued = false, true
		// The wait ended during this try: its answer is the answer.
		return time.Until(end) <= 0, retryAfter
	})
	waited = !first
	if queued && opts.Leave != nil && !done && how != waitClosed {
		// Even when the client has gone; if this fails, the ticket dies
		// within TicketLease. After Close the place is kept (waitClosed).
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.OpTimeout)
		_ = opts.Leave(uctx)
		cancel()
	}
	switch how {
	case waitStopped:
		return done, waited, tryErr
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
