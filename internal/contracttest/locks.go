package contracttest

import (
	"errors"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
)

// LockBackend is one leasegate.LockService under test.
type LockBackend struct {
	Locks leasegate.LockService
	// Advance lets time pass on the backend's clock.
	Advance Clock
	// Outage, when set, makes every later call of Locks fail at the store
	// (miniredis SetError). Nil skips the outage case.
	Outage func(t *testing.T)
}

// ttl is the lease time of cases that do not wait for expiry; short is
// the one of cases that do (the gateway's ttl_seconds is at least 1).
const (
	ttl   = 30 * time.Second
	short = time.Second
)

// Locks runs the contract of leasegate.LockService. newBackend is called
// once per case and must return a service whose state no other case sees
// (a fresh key prefix, say).
func Locks(t *testing.T, newBackend func(t *testing.T) LockBackend) {
	t.Run("a free resource is acquired with a token and Status shows the lease", func(t *testing.T) {
		b := newBackend(t)
		lk := mustAcquire(t, b, "free", "svc-a", ttl)
		if lk.Resource != "free" || lk.Owner != "svc-a" || lk.Token <= 0 {
			t.Errorf("got %+v, want resource free held by svc-a with a token above 0", lk)
		}
		if got := lk.ExpiresAt.Sub(lk.AcquiredAt); got != ttl {
			t.Errorf("got expires_at - acquired_at = %v, want %v", got, ttl)
		}
		wantStatus(t, b, "free", lk)
	})

	t.Run("another owner is not acquired and told how long the lease has left", func(t *testing.T) {
		b := newBackend(t)
		held := mustAcquire(t, b, "busy", "svc-a", ttl)
		res, err := b.Locks.Acquire(t.Context(), "", leasegate.AcquireRequest{Resource: "busy", Owner: "svc-b", TTL: ttl})
		if err != nil {
			t.Fatalf("Acquire: got %v, want a contended answer without error", err)
		}
		if res.Acquired {
			t.Fatalf("got acquired by svc-b, want refused while svc-a holds it")
		}
		if res.RetryAfter <= 0 || res.RetryAfter > ttl {
			t.Errorf("got RetryAfter %v, want in (0, %v]", res.RetryAfter, ttl)
		}
		wantStatus(t, b, "busy", held)
	})

	t.Run("the same owner re-acquiring keeps its token and moves the expiry", func(t *testing.T) {
		b := newBackend(t)
		first := mustAcquire(t, b, "again", "svc-a", ttl)
		second := mustAcquire(t, b, "again", "svc-a", 2*ttl)
		if second.Token != first.Token || !second.AcquiredAt.Equal(first.AcquiredAt) {
			t.Errorf("got token %d acquired_at %v, want unchanged %d %v", second.Token, second.AcquiredAt, first.Token, first.AcquiredAt)
		}
		if !second.ExpiresAt.After(first.ExpiresAt) {
			t.Errorf("got expires_at %v, want after %v", second.ExpiresAt, first.ExpiresAt)
		}
		wantStatus(t, b, "again", second)
	})

	t.Run("renew keeps the token and moves the expiry to now plus ttl", func(t *testing.T) {
		b := newBackend(t)
		lk := mustAcquire(t, b, "r", "svc-a", ttl)
		got, err := b.Locks.Renew(t.Context(), "", "r", "svc-a", 0, 2*ttl)
		if err != nil {
			t.Fatalf("Renew: %v", err)
		}
		if got.Token != lk.Token || got.Owner != "svc-a" || !got.AcquiredAt.Equal(lk.AcquiredAt) {
			t.Errorf("got %+v, want owner svc-a, token %d and acquired_at %v unchanged", got, lk.Token, lk.AcquiredAt)
		}
		if got.ExpiresAt.Sub(lk.AcquiredAt) < 2*ttl {
			t.Errorf("got expires_at %v, want at least acquired_at + %v = %v", got.ExpiresAt, 2*ttl, lk.AcquiredAt.Add(2*ttl))
		}
		wantStatus(t, b, "r", got)
		again, err := b.Locks.Renew(t.Context(), "", "r", "svc-a", lk.Token, ttl)
		if err != nil || again.Token != lk.Token {
			t.Errorf("renew with the lease's token: got %+v, %v; want renewed with token %d", again, err, lk.Token)
		}
	})

	refused := []struct {
		name  string
		owner string
		token func(held leasegate.Lock) int64
	}{
		{"another owner", "svc-b", func(leasegate.Lock) int64 { return 0 }},
		{"the owner under another token", "svc-a", func(held leasegate.Lock) int64 { return held.Token + 1 }},
	}
	for _, tc := range refused {
		t.Run("renew by "+tc.name+" is forbidden and changes nothing", func(t *testing.T) {
			b := newBackend(t)
			held := mustAcquire(t, b, "r", "svc-a", ttl)
			_, err := b.Locks.Renew(t.Context(), "", "r", tc.owner, tc.token(held), 2*ttl)
			if !errors.Is(err, leasegate.ErrLockForbidden) {
				t.Fatalf("got %v, want ErrLockForbidden", err)
			}
			wantStatus(t, b, "r", held)
		})
	}

	t.Run("nothing held: Status and Renew are not held, Release is not found", func(t *testing.T) {
		b := newBackend(t)
		wantNotHeld(t, b, "never", "svc-a")
	})

	t.Run("a lease past its expiry is not held, even for its owner", func(t *testing.T) {
		b := newBackend(t)
		mustAcquire(t, b, "lapsed", "svc-a", short)
		b.Advance(t, short+beyond)
		wantNotHeld(t, b, "lapsed", "svc-a")
	})

	releases := []struct {
		name string
		// setup holds "r" and returns the owner and token to release with.
		setup   func(t *testing.T, b LockBackend) (owner string, token int64)
		want    leasegate.ReleaseResult
		stillUp bool
	}{
		{"the owner releases its live lease", func(t *testing.T, b LockBackend) (string, int64) {
			mustAcquire(t, b, "r", "svc-a", ttl)
			return "svc-a", 0
		}, leasegate.Released, false},
		{"the owner releases with the lease's token", func(t *testing.T, b LockBackend) (string, int64) {
			return "svc-a", mustAcquire(t, b, "r", "svc-a", ttl).Token
		}, leasegate.Released, false},
		{"another owner is forbidden and the lease stays", func(t *testing.T, b LockBackend) (string, int64) {
			mustAcquire(t, b, "r", "svc-a", ttl)
			return "svc-b", 0
		}, leasegate.Forbidden, true},
		{"the owner under another token is forbidden and the lease stays", func(t *testing.T, b LockBackend) (string, int64) {
			return "svc-a", mustAcquire(t, b, "r", "svc-a", ttl).Token + 1
		}, leasegate.Forbidden, true},
		{"a previous holder's token cannot release the next lease", func(t *testing.T, b LockBackend) (string, int64) {
			old := mustAcquire(t, b, "r", "svc-a", ttl)
			mustRelease(t, b, "r", "svc-a", old.Token)
			mustAcquire(t, b, "r", "svc-a", ttl)
			return "svc-a", old.Token
		}, leasegate.Forbidden, true},
	}
	for _, tc := range releases {
		t.Run("release: "+tc.name, func(t *testing.T) {
			b := newBackend(t)
			owner, token := tc.setup(t, b)
			before, err := b.Locks.Status(t.Context(), "", "r")
			if err != nil {
				t.Fatalf("Status before the release: %v", err)
			}
			got, err := b.Locks.Release(t.Context(), "", "r", owner, token)
			if err != nil || got != tc.want {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
			if tc.stillUp {
				wantStatus(t, b, "r", before)
				return
			}
			if _, err := b.Locks.Status(t.Context(), "", "r"); !errors.Is(err, leasegate.ErrLockNotHeld) {
				t.Errorf("Status after the release: got %v, want ErrLockNotHeld", err)
			}
			if got, err := b.Locks.Release(t.Context(), "", "r", owner, token); err != nil || got != leasegate.NotFound {
				t.Errorf("a second release: got %v, %v; want %v", got, err, leasegate.NotFound)
			}
		})
	}

	t.Run("tokens strictly increase across releases and expiries", func(t *testing.T) {
		b := newBackend(t)
		var last int64
		next := func(step string, lk leasegate.Lock) {
			t.Helper()
			if lk.Token <= last {
				t.Fatalf("%s: got token %d, want above the previous %d", step, lk.Token, last)
			}
			last = lk.Token
		}
		for i := 0; i < 3; i++ {
			next("acquire after a release", mustAcquire(t, b, "r", "svc-a", ttl))
			mustRelease(t, b, "r", "svc-a", last)
		}
		next("acquire of a free resource", mustAcquire(t, b, "r", "svc-b", short))
		b.Advance(t, short+beyond)
		next("the same owner after its lease expired", mustAcquire(t, b, "r", "svc-b", short))
		b.Advance(t, short+beyond)
		next("another owner after the lease expired", mustAcquire(t, b, "r", "svc-c", ttl))
	})

	t.Run("a waiting acquire gets the lease once it is released", func(t *testing.T) {
		b := newBackend(t)
		held := mustAcquire(t, b, "queue", "svc-a", ttl)
		got := inBackground(func() (leasegate.AcquireResult, error) {
			return b.Locks.Acquire(t.Context(), "", leasegate.AcquireRequest{Resource: "queue", Owner: "svc-b", TTL: ttl, Wait: 20 * time.Second})
		})
		// Either order passes: released before the wait began, the
		// acquire is granted at once.
		mustRelease(t, b, "queue", "svc-a", held.Token)
		a := <-got
		if a.err != nil || !a.res.Acquired || a.res.Lock.Owner != "svc-b" || a.res.Lock.Token <= held.Token {
			t.Fatalf("got %+v, %v; want acquired by svc-b with a token above %d", a.res, a.err, held.Token)
		}
	})

	t.Run("a wait that ends while the lease is held is not acquired", func(t *testing.T) {
		b := newBackend(t)
		held := mustAcquire(t, b, "queue", "svc-a", ttl)
		res, err := b.Locks.Acquire(t.Context(), "", leasegate.AcquireRequest{Resource: "queue", Owner: "svc-b", TTL: ttl, Wait: 100 * time.Millisecond})
		if err != nil || res.Acquired {
			t.Fatalf("got %+v, %v; want not acquired", res, err)
		}
		if res.RetryAfter < 0 || res.RetryAfter > ttl {
			t.Errorf("got RetryAfter %v, want in [0, %v]", res.RetryAfter, ttl)
		}
		wantStatus(t, b, "queue", held)
	})

	t.Run("a store outage is ErrUnavailable and grants nothing", func(t *testing.T) {
		b := newBackend(t)
		needOutage(t, b.Outage)
		held := mustAcquire(t, b, "r", "svc-a", ttl)
		b.Outage(t)
		ctx := t.Context()
		res, err := b.Locks.Acquire(ctx, "", leasegate.AcquireRequest{Resource: "down", Owner: "svc-a", TTL: ttl})
		if !errors.Is(err, leasegate.ErrUnavailable) || res.Acquired {
			t.Errorf("Acquire: got %+v, %v; want ErrUnavailable and not acquired", res, err)
		}
		wantUnavailable(t, []storeCall{
			{"Status", func() error { _, err := b.Locks.Status(ctx, "", "r"); return err }},
			{"Renew", func() error { _, err := b.Locks.Renew(ctx, "", "r", "svc-a", held.Token, ttl); return err }},
			{"Release", func() error { _, err := b.Locks.Release(ctx, "", "r", "svc-a", held.Token); return err }},
		})
	})
}

func mustAcquire(t *testing.T, b LockBackend, resource, owner string, ttl time.Duration) leasegate.Lock {
	t.Helper()
	res, err := b.Locks.Acquire(t.Context(), "", leasegate.AcquireRequest{Resource: resource, Owner: owner, TTL: ttl})
	if err != nil {
		t.Fatalf("Acquire(%q, %q): %v", resource, owner, err)
	}
	if !res.Acquired {
		t.Fatalf("Acquire(%q, %q): got not acquired, want acquired", resource, owner)
	}
	return res.Lock
}

func mustRelease(t *testing.T, b LockBackend, resource, owner string, token int64) {
	t.Helper()
	got, err := b.Locks.Release(t.Context(), "", resource, owner, token)
	if err != nil || got != leasegate.Released {
		t.Fatalf("Release(%q, %q, %d): got %v, %v; want %v", resource, owner, token, got, err, leasegate.Released)
	}
}

// wantStatus checks that Status shows exactly want.
func wantStatus(t *testing.T, b LockBackend, resource string, want leasegate.Lock) {
	t.Helper()
	got, err := b.Locks.Status(t.Context(), "", resource)
	if err != nil {
		t.Fatalf("Status(%q): got %v, want %+v", resource, err, want)
	}
	if !sameLock(got, want) {
		t.Errorf("Status(%q): got %+v, want %+v", resource, got, want)
	}
}

func sameLock(a, b leasegate.Lock) bool {
	return a.Resource == b.Resource && a.Owner == b.Owner && a.Token == b.Token &&
		a.AcquiredAt.Equal(b.AcquiredAt) && a.ExpiresAt.Equal(b.ExpiresAt)
}

// wantNotHeld checks that no live lease is on resource, for owner too.
func wantNotHeld(t *testing.T, b LockBackend, resource, owner string) {
	t.Helper()
	ctx := t.Context()
	if _, err := b.Locks.Status(ctx, "", resource); !errors.Is(err, leasegate.ErrLockNotHeld) {
		t.Errorf("Status: got %v, want ErrLockNotHeld", err)
	}
	if _, err := b.Locks.Renew(ctx, "", resource, owner, 0, ttl); !errors.Is(err, leasegate.ErrLockNotHeld) {
		t.Errorf("Renew by %s: got %v, want ErrLockNotHeld", owner, err)
	}
	if got, err := b.Locks.Release(ctx, "", resource, owner, 0); err != nil || got != leasegate.NotFound {
		t.Errorf("Release by %s: got %v, %v; want %v", owner, got, err, leasegate.NotFound)
	}
	if _, err := b.Locks.Status(ctx, "", resource); !errors.Is(err, leasegate.ErrLockNotHeld) {
		t.Errorf("Status after renew and release: got %v, want still ErrLockNotHeld", err)
	}
}
