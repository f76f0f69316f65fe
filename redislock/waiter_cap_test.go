package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// With MaxWaiters set, one more waiting acquire than the cap is refused
// at once with ErrTooManyWaiters (and queues nothing); a free slot, once
// a waiter leaves, is taken again.
func TestWaiterRefusesWaitersBeyondItsCap(t *testing.T) {
	t.Parallel()
	forEachWaitRig(t, redislock.WaiterOptions{MaxWaiters: 2}, func(t *testing.T, r *waitRig) {
		r.hold(t, "a", "holder", time.Minute)
		r.hold(t, "b", "holder", time.Minute)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		first := r.startWait(ctx, "a", "w1", time.Minute, 30*time.Second)
		r.startWait(ctx, "b", "w2", time.Minute, 30*time.Second)
		redistest.Eventually(t, 10*time.Second, "two waiters queued", func() bool { return r.w.Waiting() == 2 })

		res, err := r.w.Acquire(context.Background(), r.l.Locker, redislock.WaitRequest{Resource: "a", Owner: "w3", TTL: time.Minute, Wait: 30 * time.Second})
		if !errors.Is(err, leasegate.ErrTooManyWaiters) || res.Acquired {
			t.Fatalf("third waiter: got %+v, %v; want ErrTooManyWaiters", res, err)
		}
		if got := leasegate.ErrorCode(err); got != leasegate.CodeUnavailable {
			t.Errorf("got code %q, want unavailable (503 with Retry-After)", got)
		}
		if got := r.w.Waiting(); got != 2 {
			t.Errorf("got %d waiting after the refusal, want 2 (nothing queued)", got)
		}

		t.Run("a plain acquire is not a waiter and is not capped", func(t *testing.T) {
			res, err := r.w.Acquire(context.Background(), r.l.Locker, redislock.WaitRequest{Resource: "c", Owner: "w4", TTL: time.Minute})
			if err != nil || !res.Acquired {
				t.Errorf("got %+v, %v; want acquired", res, err)
			}
		})
		t.Run("a slot freed by a leaving waiter is taken again", func(t *testing.T) {
			r.release(t, "a", "holder")
			if o := receive(t, first, 10*time.Second); o.err != nil || !o.res.Acquired {
				t.Fatalf("first waiter: got %+v, %v; want acquired", o.res, o.err)
			}
			redistest.Eventually(t, 10*time.Second, "one waiter left", func() bool { return r.w.Waiting() == 1 })
			ch := r.startWait(ctx, "b", "w5", time.Minute, 30*time.Second)
			redistest.Eventually(t, 10*time.Second, "two waiters again", func() bool { return r.w.Waiting() == 2 })
			cancel()
			if o := receive(t, ch, 10*time.Second); !errors.Is(o.err, context.Canceled) {
				t.Errorf("got %+v, %v; want the wait cancelled with its context", o.res, o.err)
			}
		})
	})
}
