package semaphore_test

import (
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/contracttest"
	"github.com/leasegate/leasegate/internal/redistest"
)

// A waiting acquire is woken when a crashed holder's permit expires: no
// release is ever published, so only the expiry hint wakes it.
func TestAWaitingAcquireGetsTheSlotOfAnExpiredPermit(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	svc := newService(t, contracttest.Store{RDB: rs.Client(t)})
	ctx := t.Context()
	crashed, err := svc.Acquire(ctx, "", leasegate.SemaphoreRequest{Name: "exp", Owner: "crashed", TTL: time.Second, Limit: 1})
	if err != nil || !crashed.Acquired {
		t.Fatalf("got %+v, %v", crashed, err)
	}
	res, err := svc.Acquire(ctx, "", leasegate.SemaphoreRequest{Name: "exp", Owner: "next", TTL: time.Minute, Limit: 1, Wait: 10 * time.Second})
	if err != nil || !res.Acquired || !res.Waited {
		t.Fatalf("got %+v, %v; want acquired after waiting", res, err)
	}
	if !res.Permit.AcquiredAt.After(crashed.Permit.ExpiresAt) && !res.Permit.AcquiredAt.Equal(crashed.Permit.ExpiresAt) {
		t.Errorf("granted at %v, before the crashed permit expired at %v", res.Permit.AcquiredAt, crashed.Permit.ExpiresAt)
	}
	if res.Permit.Token <= crashed.Permit.Token {
		t.Errorf("got token %d, want above %d", res.Permit.Token, crashed.Permit.Token)
	}
}

// Several waiters on a semaphore with several slots all get one when the
// holders release, each woken in turn (the hand-off of the FIFO queue).
func TestWaitersShareTheSlotsReleasedAtOnce(t *testing.T) {
	t.Parallel()
	contracttest.ForEachStore(t, func(t *testing.T, s contracttest.Store) {
		svc := newService(t, s)
		ctx := t.Context()
		req := func(owner string, wait time.Duration) leasegate.SemaphoreRequest {
			return leasegate.SemaphoreRequest{Name: "pool", Owner: owner, TTL: time.Minute, Limit: 3, Wait: wait}
		}
		var held []leasegate.Permit
		for _, o := range []string{"h1", "h2", "h3"} {
			res, err := svc.Acquire(ctx, "", req(o, 0))
			if err != nil || !res.Acquired {
				t.Fatalf("%s: got %+v, %v", o, res, err)
			}
			held = append(held, res.Permit)
		}
		got := make(chan leasegate.SemaphoreResult, 3)
		for _, o := range []string{"w1", "w2", "w3"} {
			go func() {
				res, err := svc.Acquire(ctx, "", req(o, 20*time.Second))
				if err != nil {
					t.Errorf("%s: %v", o, err)
				}
				got <- res
			}()
		}
		for _, p := range held {
			if r, err := svc.Release(ctx, "", "pool", p.Owner, p.Token); err != nil || r != leasegate.Released {
				t.Fatalf("release %s: %v, %v", p.Owner, r, err)
			}
		}
		for range 3 {
			if res := <-got; !res.Acquired {
				t.Errorf("got %+v, want every waiter to get a slot", res)
			}
		}
	})
}
