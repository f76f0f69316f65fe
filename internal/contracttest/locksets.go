package contracttest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
)

// LockSetBackend is one leasegate.LockSetService under test, with the
// LockService of the same locks (to read and take single members).
type LockSetBackend struct {
	Sets  leasegate.LockSetService
	Locks leasegate.LockService
	// Advance lets time pass on the backend's clock.
	Advance Clock
	// Outage, when set, makes every later call fail at the store.
	Outage func(t *testing.T)
}

// LockSets runs the contract of leasegate.LockSetService (contract v1.2,
// "All-or-nothing lock sets"; docs/lock-sets.md).
func LockSets(t *testing.T, newBackend func(t *testing.T) LockSetBackend) {
	acquire := func(t *testing.T, b LockSetBackend, req leasegate.LockSetRequest) leasegate.LockSetResult {
		t.Helper()
		res, err := b.Sets.AcquireSet(t.Context(), "", req)
		if err != nil {
			t.Fatalf("AcquireSet(%v by %q): %v", req.Resources, req.Owner, err)
		}
		return res
	}
	holdsNone := func(t *testing.T, b LockSetBackend, owner string, resources ...string) {
		t.Helper()
		for _, r := range resources {
			if lk, err := b.Locks.Status(t.Context(), "", r); err == nil && lk.Owner == owner {
				t.Errorf("%q holds %q, want none of the set", owner, r)
			}
		}
	}

	t.Run("a free set is granted whole with a lease and a token per member", func(t *testing.T) {
		b := newBackend(t)
		set := []string{"a", "b", "c"}
		res := acquire(t, b, leasegate.LockSetRequest{Resources: set, Owner: "svc-a", TTL: ttl})
		if !res.Acquired || len(res.Locks) != len(set) {
			t.Fatalf("got %+v, want %d leases", res, len(set))
		}
		for i, r := range set {
			lk := res.Locks[i]
			if lk.Resource != r || lk.Owner != "svc-a" || lk.Token <= 0 || lk.ExpiresAt.Sub(lk.AcquiredAt) != ttl {
				t.Errorf("member %d: got %+v, want svc-a's %v lease on %q", i, lk, ttl, r)
			}
			wantStatus(t, LockBackend{Locks: b.Locks}, r, lk)
		}
	})

	t.Run("a member held by another owner refuses the set and none is taken", func(t *testing.T) {
		b := newBackend(t)
		if res, err := b.Locks.Acquire(t.Context(), "", leasegate.AcquireRequest{Resource: "b", Owner: "svc-x", TTL: ttl}); err != nil || !res.Acquired {
			t.Fatalf("Acquire b: %+v, %v", res, err)
		}
		res := acquire(t, b, leasegate.LockSetRequest{Resources: []string{"a", "b", "c"}, Owner: "svc-a", TTL: ttl})
		if res.Acquired || len(res.Held) != 1 || res.Held[0].Resource != "b" || res.Held[0].RetryAfter <= 0 || res.Held[0].RetryAfter > ttl {
			t.Fatalf("got %+v, want refused by b with its time left", res)
		}
		holdsNone(t, b, "svc-a", "a", "b", "c")
	})

	t.Run("a member the owner already holds counts as acquired and keeps its token", func(t *testing.T) {
		b := newBackend(t)
		mine, err := b.Locks.Acquire(t.Context(), "", leasegate.AcquireRequest{Resource: "a", Owner: "svc-a", TTL: ttl})
		if err != nil || !mine.Acquired {
			t.Fatalf("Acquire a: %+v, %v", mine, err)
		}
		res := acquire(t, b, leasegate.LockSetRequest{Resources: []string{"a", "b"}, Owner: "svc-a", TTL: ttl})
		if !res.Acquired || res.Locks[0].Token != mine.Lock.Token {
			t.Errorf("got %+v, want granted with a's token %d kept", res, mine.Lock.Token)
		}
	})

	t.Run("after a member expires within its lock delay the set is refused, then granted", func(t *testing.T) {
		b := newBackend(t)
		if res, err := b.Locks.Acquire(t.Context(), "", leasegate.AcquireRequest{Resource: "d", Owner: "svc-x", TTL: short, LockDelay: 2 * time.Second}); err != nil || !res.Acquired {
			t.Fatalf("Acquire d: %+v, %v", res, err)
		}
		b.Advance(t, short+100*time.Millisecond)
		res := acquire(t, b, leasegate.LockSetRequest{Resources: []string{"c", "d"}, Owner: "svc-a", TTL: ttl})
		if res.Acquired || len(res.Held) != 1 || res.Held[0].Resource != "d" || res.Held[0].RetryAfter <= 0 || res.Held[0].RetryAfter > 2*time.Second {
			t.Fatalf("got %+v, want refused by d's lock delay", res)
		}
		holdsNone(t, b, "svc-a", "c", "d")
		b.Advance(t, 2*time.Second)
		if res := acquire(t, b, leasegate.LockSetRequest{Resources: []string{"c", "d"}, Owner: "svc-a", TTL: ttl}); !res.Acquired {
			t.Errorf("got %+v, want granted once the delay is over", res)
		}
	})

	t.Run("releasing a set names what it released and what was not held", func(t *testing.T) {
		b := newBackend(t)
		acquire(t, b, leasegate.LockSetRequest{Resources: []string{"a", "b"}, Owner: "svc-a", TTL: ttl})
		got, err := b.Sets.ReleaseSet(t.Context(), "", "svc-a", []string{"a", "b", "none"})
		if err != nil {
			t.Fatalf("ReleaseSet: %v", err)
		}
		if !slices.Equal(got.Released, []string{"a", "b"}) || !slices.Equal(got.NotHeld, []string{"none"}) {
			t.Errorf("got %+v, want released [a b], not held [none]", got)
		}
		holdsNone(t, b, "svc-a", "a", "b")
	})

	t.Run("a waiting set is granted when its last member is released", func(t *testing.T) {
		b := newBackend(t)
		if res, err := b.Locks.Acquire(t.Context(), "", leasegate.AcquireRequest{Resource: "y", Owner: "svc-x", TTL: ttl}); err != nil || !res.Acquired {
			t.Fatalf("Acquire y: %+v, %v", res, err)
		}
		got := inBackground(func() (leasegate.LockSetResult, error) {
			return b.Sets.AcquireSet(t.Context(), "", leasegate.LockSetRequest{Resources: []string{"x", "y"}, Owner: "svc-a", TTL: ttl, Wait: 10 * time.Second})
		})
		if r, err := b.Locks.Release(t.Context(), "", "y", "svc-x", 0); err != nil || r != leasegate.Released {
			t.Fatalf("Release y: %v, %v", r, err)
		}
		a := <-got
		if a.err != nil || !a.res.Acquired {
			t.Fatalf("got %+v, %v; want granted", a.res, a.err)
		}
	})

	t.Run("a store failure grants nothing", func(t *testing.T) {
		b := newBackend(t)
		needOutage(t, b.Outage)
		b.Outage(t)
		_, err := b.Sets.AcquireSet(t.Context(), "", leasegate.LockSetRequest{Resources: []string{"a", "b"}, Owner: "svc-a", TTL: ttl})
		if !errors.Is(err, leasegate.ErrUnavailable) {
			t.Errorf("got %v, want ErrUnavailable", err)
		}
	})
}
