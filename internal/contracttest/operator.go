package contracttest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
)

// OperatorBackend is one leasegate.LockOperator under test, with the
// LockService whose leases it sees.
type OperatorBackend struct {
	Locks leasegate.LockService
	Ops   leasegate.LockOperator
}

// Operator runs the contract of leasegate.LockOperator. newBackend is
// called once per case and must return services whose state no other
// case sees.
func Operator(t *testing.T, newBackend func(t *testing.T) OperatorBackend) {
	acquire := func(t *testing.T, b OperatorBackend, resource, owner string) leasegate.Lock {
		t.Helper()
		res, err := b.Locks.Acquire(t.Context(), "", leasegate.AcquireRequest{Resource: resource, Owner: owner, TTL: ttl})
		if err != nil || !res.Acquired {
			t.Fatalf("Acquire(%q): got %+v, %v", resource, res, err)
		}
		return res.Lock
	}

	t.Run("List pages the live leases of a prefix in resource order", func(t *testing.T) {
		b := newBackend(t)
		for _, r := range []string{"job-b", "job-a", "job-c", "other"} {
			acquire(t, b, r, "w-"+r)
		}
		var got []string
		cursor := ""
		for i := 0; i < 10; i++ {
			p, err := b.Ops.List(t.Context(), "", "job-", cursor, 2)
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			for _, h := range p.Items {
				got = append(got, h.Resource+"/"+h.Owner)
				if h.Token <= 0 || !h.ExpiresAt.After(h.AcquiredAt) {
					t.Errorf("got %+v, want a lease with a token and times", h)
				}
			}
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
		if want := "[job-a/w-job-a job-b/w-job-b job-c/w-job-c]"; fmt.Sprint(got) != want {
			t.Errorf("got %v, want %s", got, want)
		}
	})

	t.Run("ForceRelease ends the lease and burns its token", func(t *testing.T) {
		b := newBackend(t)
		lk := acquire(t, b, "stuck", "w1")
		got, err := b.Ops.ForceRelease(t.Context(), "", "stuck", "wedged", leasegate.RequestMeta{})
		if err != nil || got.Owner != "w1" || got.Token != lk.Token {
			t.Fatalf("ForceRelease: got %+v, %v; want w1's lease", got, err)
		}
		if _, err := b.Locks.Renew(t.Context(), "", "stuck", "w1", lk.Token, ttl); !errors.Is(err, leasegate.ErrLockNotHeld) {
			t.Errorf("the former holder's renew: got %v, want ErrLockNotHeld", err)
		}
		if next := acquire(t, b, "stuck", "w2"); next.Token <= lk.Token {
			t.Errorf("next token %d, want above %d", next.Token, lk.Token)
		}
		if _, err := b.Ops.ForceRelease(t.Context(), "", "free", "x", leasegate.RequestMeta{}); !errors.Is(err, leasegate.ErrLockNotHeld) {
			t.Errorf("nothing held: got %v, want ErrLockNotHeld", err)
		}
	})

	t.Run("Watch starts with the state and reports an acquire and a forced release", func(t *testing.T) {
		b := newBackend(t)
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		events := make(chan leasegate.LockEvent, 8)
		done := make(chan error, 1)
		go func() { done <- b.Ops.Watch(ctx, "", "watched", events) }()
		next := func() leasegate.LockEvent {
			t.Helper()
			select {
			case e := <-events:
				return e
			case err := <-done:
				t.Fatalf("Watch ended: %v", err)
			case <-ctx.Done():
				t.Fatal("no event within 20 s")
			}
			return leasegate.LockEvent{}
		}
		if e := next(); e.Kind != leasegate.EventState || e.Lock != nil {
			t.Fatalf("first event %+v, want state of a free resource", e)
		}
		lk := acquire(t, b, "watched", "w1")
		if e := next(); e.Kind != leasegate.EventAcquired || e.Lock == nil || e.Lock.Token != lk.Token {
			t.Errorf("got %+v, want acquired with token %d", e, lk.Token)
		}
		if _, err := b.Ops.ForceRelease(t.Context(), "", "watched", "x", leasegate.RequestMeta{}); err != nil {
			t.Fatal(err)
		}
		if e := next(); e.Kind != leasegate.EventForceReleased || e.Lock == nil || e.Lock.Owner != "w1" {
			t.Errorf("got %+v, want force-released of w1's lease", e)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch after its context ended: %v, want nil", err)
		}
	})
}
