package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/redislock"
)

// acquireDelayed is an acquire with a lock delay.
func (l *locker) acquireDelayed(t *testing.T, resource, owner string, ttl, delay time.Duration) leasegate.AcquireResult {
	t.Helper()
	res, err := l.svc.Acquire(context.Background(), l.tenant, leasegate.AcquireRequest{
		Resource: resource, Owner: owner, TTL: ttl, LockDelay: delay})
	if err != nil {
		t.Fatalf("Acquire(%q, %q, delay %v): %v", resource, owner, delay, err)
	}
	return res
}

// hashFields is the lock hash of resource as Redis holds it.
func hashFields(t *testing.T, e *engine, l *locker, resource string) map[string]string {
	t.Helper()
	key, _ := l.Keys(resource)
	m, err := e.RDB.HGetAll(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("HGETALL %s: %v", key, err)
	}
	return m
}

func TestLockDelay(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		lease, delay := e.stale, 4*e.stale

		t.Run("after an expiry another owner is refused for the delay, then granted", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			first := l.acquireDelayed(t, "paused", "svc-a", lease, delay)
			if !first.Acquired {
				t.Fatalf("got %+v, want acquired", first)
			}
			if got := hashFields(t, e, l, "paused")["lock_delay"]; got != "200" && got != "2000" {
				t.Errorf("got lock_delay %q, want the delay in ms", got)
			}
			e.Advance(t, lease+time.Millisecond)
			res := l.acquireDelayed(t, "paused", "svc-b", lease, 0)
			if res.Acquired || !res.Delayed {
				t.Fatalf("got %+v, want refused by the lock delay", res)
			}
			if res.Lock.Owner != "svc-a" || res.Lock.Token != first.Lock.Token || !res.Lock.ExpiresAt.Equal(first.Lock.ExpiresAt) {
				t.Errorf("got lock %+v, want the expired lease %+v", res.Lock, first.Lock)
			}
			if res.RetryAfter <= 0 || res.RetryAfter > delay {
				t.Errorf("got RetryAfter %v, want in (0, %v]", res.RetryAfter, delay)
			}
			if _, err := l.Status(ctx, "paused"); err == nil {
				t.Errorf("status of an expired lease in its delay: got a lease, want ErrLockNotHeld")
			}
			e.Advance(t, res.RetryAfter+time.Millisecond)
			next := l.acquireDelayed(t, "paused", "svc-b", lease, 0)
			if !next.Acquired || next.Lock.Token <= first.Lock.Token {
				t.Fatalf("after the delay: got %+v, want granted with a token above %d", next, first.Lock.Token)
			}
			if _, ok := hashFields(t, e, l, "paused")["lock_delay"]; ok {
				t.Errorf("a grant without a delay left the field lock_delay")
			}
		})

		t.Run("the same owner takes it again within the delay", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			first := l.acquireDelayed(t, "mine", "svc-a", lease, delay)
			e.Advance(t, lease+time.Millisecond)
			again := l.acquireDelayed(t, "mine", "svc-a", lease, delay)
			if !again.Acquired || again.Lock.Token <= first.Lock.Token {
				t.Errorf("got %+v, want granted anew (token above %d)", again, first.Lock.Token)
			}
		})

		t.Run("a release ends the lease with no delay", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			l.acquireDelayed(t, "done", "svc-a", time.Minute, delay)
			mustRelease(t, l, "done", "svc-a")
			if got := hashFields(t, e, l, "done"); len(got) != 1 || got["token"] == "" {
				t.Errorf("got tombstone %v, want the token alone", got)
			}
			if res := l.acquireDelayed(t, "done", "svc-b", lease, 0); !res.Acquired {
				t.Errorf("got %+v, want granted at once after a release", res)
			}
		})

		t.Run("a forced release ends the lease with no delay", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			o := redislock.NewOperator(e.RDB, l.Locker, nil, redislock.OperatorOptions{})
			l.acquireDelayed(t, "stuck", "svc-a", time.Minute, delay)
			if _, err := o.ForceRelease(ctx, "", "stuck", "test", leasegate.RequestMeta{}); err != nil {
				t.Fatalf("ForceRelease: %v", err)
			}
			if res := l.acquireDelayed(t, "stuck", "svc-b", lease, 0); !res.Acquired {
				t.Errorf("got %+v, want granted at once after a forced release", res)
			}
		})

		t.Run("a lease without a delay is taken over at its expiry, its hash unchanged", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			first := mustAcquire(t, l, "plain", "svc-a", lease)
			if got := hashFields(t, e, l, "plain"); len(got) != 4 {
				t.Errorf("got fields %v, want owner, token, acquired_at, expires_at", got)
			}
			e.Advance(t, lease+time.Millisecond)
			next := l.acquireDelayed(t, "plain", "svc-b", lease, 0)
			if !next.Acquired || next.Delayed || next.Lock.Token <= first.Token {
				t.Errorf("got %+v, want granted at expiry", next)
			}
		})

		t.Run("a same-owner re-acquire takes the new request's delay", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			l.acquireDelayed(t, "swap", "svc-a", time.Minute, delay)
			l.acquireDelayed(t, "swap", "svc-a", lease, 0)
			if _, ok := hashFields(t, e, l, "swap")["lock_delay"]; ok {
				t.Errorf("a re-acquire without a delay left the field lock_delay")
			}
			e.Advance(t, lease+time.Millisecond)
			if res := l.acquireDelayed(t, "swap", "svc-b", lease, 0); !res.Acquired {
				t.Errorf("got %+v, want granted at expiry (no delay any more)", res)
			}
		})

		t.Run("a renew keeps the delay", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			first := l.acquireDelayed(t, "kept", "svc-a", lease, delay)
			if _, err := l.Renew(ctx, "kept", "svc-a", first.Lock.Token, lease); err != nil {
				t.Fatalf("Renew: %v", err)
			}
			e.Advance(t, lease+time.Millisecond)
			if res := l.acquireDelayed(t, "kept", "svc-b", lease, 0); res.Acquired || !res.Delayed {
				t.Errorf("got %+v, want refused by the delay the renew kept", res)
			}
		})

		t.Run("the key lives at least until the delay ends", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{FenceRetention: time.Millisecond})
			res := l.acquireDelayed(t, "short", "svc-a", time.Minute, 30*time.Second)
			key, _ := l.Keys("short")
			pttl, err := e.RDB.PTTL(ctx, key).Result()
			if err != nil || pttl < time.Minute+29*time.Second {
				t.Errorf("got PTTL %v (%v), want at least ttl + delay (%v, lease %+v)", pttl, err, 90*time.Second, res.Lock)
			}
			if _, err := l.Renew(ctx, "short", "svc-a", res.Lock.Token, time.Minute); err != nil {
				t.Fatalf("Renew: %v", err)
			}
			if pttl, err := e.RDB.PTTL(ctx, key).Result(); err != nil || pttl < time.Minute+29*time.Second {
				t.Errorf("after a renew: got PTTL %v (%v), want at least ttl + delay", pttl, err)
			}
		})

		t.Run("a delay out of range is an error and changes nothing", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			for _, d := range []time.Duration{-time.Millisecond, leasegate.MaxLockDelay + time.Millisecond} {
				_, err := l.svc.Acquire(ctx, "", leasegate.AcquireRequest{Resource: "bad", Owner: "svc-a", TTL: lease, LockDelay: d})
				if err == nil {
					t.Errorf("delay %v: got no error, want one", d)
				}
			}
			if got := hashFields(t, e, l, "bad"); len(got) != 0 {
				t.Errorf("got %v, want no key", got)
			}
		})
	})
}

func TestWaitingAcquireWakesWhenTheLockDelayEnds(t *testing.T) {
	t.Parallel()
	forEachWaitRig(t, redislock.WaiterOptions{}, func(t *testing.T, r *waitRig) {
		ctx := context.Background()
		const lease, delay = 100 * time.Millisecond, 300 * time.Millisecond
		first, err := r.l.svc.Acquire(ctx, "", leasegate.AcquireRequest{Resource: "d", Owner: "svc-a", TTL: lease, LockDelay: delay})
		if err != nil || !first.Acquired {
			t.Fatalf("got %+v, %v; want acquired", first, err)
		}

		t.Run("a wait shorter than the delay ends refused, not at the delay's end", func(t *testing.T) {
			start := time.Now()
			out := <-r.startWait(ctx, "d", "svc-short", time.Second, 150*time.Millisecond)
			if out.err != nil || out.res.Acquired {
				t.Fatalf("got %+v, %v; want refused", out.res, out.err)
			}
			// The delay ends 400ms after the grant: an answer before that
			// did not sleep past wait_ms.
			if el := out.at.Sub(start); el >= lease+delay {
				t.Errorf("answered after %v, want before the delay's end (%v)", el, lease+delay)
			}
		})

		t.Run("a waiting acquire is granted once the delay is over", func(t *testing.T) {
			out := <-r.startWait(ctx, "d", "svc-b", time.Second, 5*time.Second)
			if out.err != nil || !out.res.Acquired || !out.res.Waited {
				t.Fatalf("got %+v, %v; want granted after waiting", out.res, out.err)
			}
			if free := first.Lock.ExpiresAt.Add(delay); out.res.Lock.AcquiredAt.Before(free) {
				t.Errorf("granted at %v, want no earlier than the delay's end %v (Redis clock)", out.res.Lock.AcquiredAt, free)
			}
		})
	})
}
