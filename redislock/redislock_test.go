package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/redislock"
)

const ttl = 30 * time.Second

func TestAcquire(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()

		t.Run("a free resource is granted with a token and Redis-clock times", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			before := redisNow(t, e.RDB).Truncate(time.Millisecond)
			lk := mustAcquire(t, l, "free", "svc-a", ttl)
			after := redisNow(t, e.RDB)
			if lk.Resource != "free" || lk.Owner != "svc-a" {
				t.Errorf("got resource %q owner %q, want %q %q", lk.Resource, lk.Owner, "free", "svc-a")
			}
			if lk.Token <= 0 {
				t.Errorf("got token %d, want > 0", lk.Token)
			}
			if lk.AcquiredAt.Before(before) || lk.AcquiredAt.After(after) {
				t.Errorf("got acquired_at %v, want between %v and %v (Redis TIME)", lk.AcquiredAt, before, after)
			}
			if got := lk.ExpiresAt.Sub(lk.AcquiredAt); got != ttl {
				t.Errorf("got expires_at - acquired_at = %v, want %v", got, ttl)
			}
			st, err := l.Status(ctx, "free")
			if err != nil {
				t.Fatalf("Status: %v", err)
			}
			if st != lk {
				t.Errorf("got status %+v, want %+v", st, lk)
			}
		})

		t.Run("another owner is refused and told how long the lease has left", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			held := mustAcquire(t, l, "busy", "svc-a", ttl)
			res, err := l.Acquire(ctx, "busy", "svc-b", ttl)
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			if res.Acquired {
				t.Fatalf("got acquired by svc-b, want refused while svc-a holds it")
			}
			if res.Lock != held {
				t.Errorf("got holder %+v, want %+v", res.Lock, held)
			}
			if res.RetryAfter <= 0 || res.RetryAfter > ttl {
				t.Errorf("got RetryAfter %v, want in (0, %v]", res.RetryAfter, ttl)
			}
			st, err := l.Status(ctx, "busy")
			if err != nil || st != held {
				t.Errorf("got status %+v, %v; want the original lease unchanged %+v", st, err, held)
			}
		})

		t.Run("the same owner re-acquiring keeps its token and moves the expiry", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			first := mustAcquire(t, l, "again", "svc-a", ttl)
			e.Advance(t, 5*time.Millisecond)
			second := mustAcquire(t, l, "again", "svc-a", 2*ttl)
			if second.Token != first.Token {
				t.Errorf("got token %d, want the same token %d", second.Token, first.Token)
			}
			if !second.AcquiredAt.Equal(first.AcquiredAt) {
				t.Errorf("got acquired_at %v, want unchanged %v", second.AcquiredAt, first.AcquiredAt)
			}
			if !second.ExpiresAt.After(first.ExpiresAt) {
				t.Errorf("got expires_at %v, want after %v", second.ExpiresAt, first.ExpiresAt)
			}
			st, err := l.Status(ctx, "again")
			if err != nil || st != second {
				t.Errorf("got status %+v, %v; want %+v", st, err, second)
			}
			pttl, err := e.RDB.PTTL(ctx, lockKey(l, "again")).Result()
			if err != nil || pttl <= ttl {
				t.Errorf("got lock key PTTL %v (%v), want above %v: Redis must reap it at the new expiry, not the old", pttl, err, ttl)
			}
		})

		// A lease of svc-a expires; next takes the resource over.
		for _, tc := range []struct{ name, next string }{
			{"an expired lease is taken over by anyone with a new, higher token", "svc-b"},
			{"the same owner whose lease expired gets a new token, not its old one", "svc-a"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				l := newLocker(t, e.RDB, redislock.Config{})
				old := mustAcquire(t, l, "stale", "svc-a", 50*time.Millisecond)
				e.Advance(t, 51*time.Millisecond)
				lk := mustAcquire(t, l, "stale", tc.next, ttl)
				if lk.Token <= old.Token {
					t.Errorf("got token %d, want above the expired lease's %d: a lapsed lease is a new holder", lk.Token, old.Token)
				}
				if lk.Owner != tc.next {
					t.Errorf("got owner %q, want %s", lk.Owner, tc.next)
				}
			})
		}

		t.Run("an expired lease Redis has not reaped yet is still free", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			old := mustAcquire(t, l, "unreaped", "svc-a", e.stale)
			keepKey(t, e, l, "unreaped")
			e.Advance(t, e.stale+time.Millisecond)
			lk := mustAcquire(t, l, "unreaped", "svc-b", ttl)
			if lk.Token <= old.Token {
				t.Errorf("got token %d, want above %d", lk.Token, old.Token)
			}
		})

		t.Run("Redis reaps the lock key, also the fence, a retention after expires_at", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{FenceRetention: time.Hour})
			mustAcquire(t, l, "ttl", "svc-a", ttl)
			if got := e.RDB.PTTL(ctx, lockKey(l, "ttl")).Val(); got <= ttl+time.Hour-time.Second || got > ttl+time.Hour {
				t.Errorf("got lock key PTTL %v, want about %v", got, ttl+time.Hour)
			}
			if _, err := l.Renew(ctx, "ttl", "svc-a", 0, 2*ttl); err != nil {
				t.Fatalf("Renew: %v", err)
			}
			if got := e.RDB.PTTL(ctx, lockKey(l, "ttl")).Val(); got <= 2*ttl+time.Hour-time.Second || got > 2*ttl+time.Hour {
				t.Errorf("after renew: got lock key PTTL %v, want about %v", got, 2*ttl+time.Hour)
			}
		})

		t.Run("a ttl under one millisecond is refused before Redis is called", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			if _, err := l.Acquire(ctx, "tiny", "svc-a", time.Microsecond); err == nil {
				t.Fatalf("got no error for a 1µs ttl, want one")
			}
			if n := e.RDB.Exists(ctx, lockKey(l, "tiny")).Val(); n != 0 {
				t.Errorf("got %d lock keys, want 0", n)
			}
		})
	})
}

func TestRelease(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		cases := []struct {
			name    string
			setup   func(t *testing.T, l *locker) int64 // returns the token to release with (0 = any)
			owner   string
			want    leasegate.ReleaseResult
			stillUp bool
		}{
			{
				name:  "the owner releases its live lease",
				setup: func(t *testing.T, l *locker) int64 { mustAcquire(t, l, "r", "svc-a", ttl); return 0 },
				owner: "svc-a", want: leasegate.Released,
			},
			{
				name: "the owner releases with the matching token",
				setup: func(t *testing.T, l *locker) int64 {
					return mustAcquire(t, l, "r", "svc-a", ttl).Token
				},
				owner: "svc-a", want: leasegate.Released,
			},
			{
				name:  "nothing held is not found",
				setup: func(t *testing.T, l *locker) int64 { return 0 },
				owner: "svc-a", want: leasegate.NotFound,
			},
			{
				name: "an expired lease is not found, even for its owner",
				setup: func(t *testing.T, l *locker) int64 {
					mustAcquire(t, l, "r", "svc-a", e.stale)
					keepKey(t, e, l, "r")
					e.Advance(t, e.stale+time.Millisecond)
					return 0
				},
				owner: "svc-a", want: leasegate.NotFound,
			},
			{
				name:  "another owner is forbidden and the lease stays",
				setup: func(t *testing.T, l *locker) int64 { mustAcquire(t, l, "r", "svc-a", ttl); return 0 },
				owner: "svc-b", want: leasegate.Forbidden, stillUp: true,
			},
			{
				name: "the owner with another token is forbidden and the lease stays",
				setup: func(t *testing.T, l *locker) int64 {
					return mustAcquire(t, l, "r", "svc-a", ttl).Token + 1
				},
				owner: "svc-a", want: leasegate.Forbidden, stillUp: true,
			},
			{
				name: "a previous holder's token cannot release the next lease",
				setup: func(t *testing.T, l *locker) int64 {
					old := mustAcquire(t, l, "r", "svc-a", ttl)
					mustRelease(t, l, "r", "svc-a")
					mustAcquire(t, l, "r", "svc-a", ttl)
					return old.Token
				},
				owner: "svc-a", want: leasegate.Forbidden, stillUp: true,
			},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				l := newLocker(t, e.RDB, redislock.Config{})
				token := tc.setup(t, l)
				before, _ := l.Status(ctx, "r")
				got, err := l.Release(ctx, "r", tc.owner, token)
				if err != nil {
					t.Fatalf("Release: %v", err)
				}
				if got != tc.want {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
				checkLeft(t, l, "r", before, tc.stillUp)
			})
		}
	})
}

// The message names the lock key and the next in line: the waiter Redis
// grants next, which the gateway holding it wakes.
func TestReleasePublishesItsLockKeyAndTheNextInLine(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		channel := uniquePrefix(t) + "released"
		l := newLocker(t, e.RDB, redislock.Config{ReleaseChannel: channel})
		sub := e.RDB.Subscribe(ctx, channel)
		t.Cleanup(func() { _ = sub.Close() })
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		// Releases publish while some acquire waits (interest_test.go):
		// this one ends the holder's lease with a waiter registered.
		registerWaiter(t, l, "pub", "w1")
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		msg, err := sub.ReceiveMessage(rctx)
		if err != nil {
			t.Fatalf("ReceiveMessage: %v", err)
		}
		if want := l.ReleaseMessage("pub") + "\nwaiter-w1"; msg.Payload != want {
			t.Errorf("got message %q, want %q", msg.Payload, want)
		}
	})
}

func TestRenew(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()

		t.Run("the owner's renewal keeps the token and moves the expiry to now plus ttl", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			lk := mustAcquire(t, l, "r", "svc-a", ttl)
			e.Advance(t, 10*time.Millisecond)
			before := redisNow(t, e.RDB).Truncate(time.Millisecond)
			got, err := l.Renew(ctx, "r", "svc-a", 0, 2*ttl)
			if err != nil {
				t.Fatalf("Renew: %v", err)
			}
			if got.Token != lk.Token || !got.AcquiredAt.Equal(lk.AcquiredAt) || got.Owner != "svc-a" {
				t.Errorf("got %+v, want token %d and acquired_at %v unchanged", got, lk.Token, lk.AcquiredAt)
			}
			if got.ExpiresAt.Before(before.Add(2 * ttl)) {
				t.Errorf("got expires_at %v, want at least %v", got.ExpiresAt, before.Add(2*ttl))
			}
			if st, err := l.Status(ctx, "r"); err != nil || st != got {
				t.Errorf("got status %+v, %v; want %+v", st, err, got)
			}
		})

		t.Run("a renewal with the matching token succeeds", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			lk := mustAcquire(t, l, "r", "svc-a", ttl)
			if _, err := l.Renew(ctx, "r", "svc-a", lk.Token, ttl); err != nil {
				t.Fatalf("Renew with token %d: %v", lk.Token, err)
			}
		})

		t.Run("a short renewal lets the lease expire at the new, earlier time", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			mustAcquire(t, l, "r", "svc-a", ttl)
			if _, err := l.Renew(ctx, "r", "svc-a", 0, 50*time.Millisecond); err != nil {
				t.Fatalf("Renew: %v", err)
			}
			e.Advance(t, 51*time.Millisecond)
			if _, err := l.Status(ctx, "r"); !errors.Is(err, leasegate.ErrLockNotHeld) {
				t.Errorf("got %v, want ErrLockNotHeld", err)
			}
		})

		refused := []struct {
			name    string
			setup   func(t *testing.T, l *locker) int64
			owner   string
			want    error
			stillUp bool
		}{
			{"nothing held is not renewed", func(t *testing.T, l *locker) int64 { return 0 },
				"svc-a", leasegate.ErrLockNotHeld, false},
			{"an expired lease is never renewed, even by its owner", func(t *testing.T, l *locker) int64 {
				mustAcquire(t, l, "r", "svc-a", e.stale)
				keepKey(t, e, l, "r")
				e.Advance(t, e.stale+time.Millisecond)
				return 0
			}, "svc-a", leasegate.ErrLockNotHeld, false},
			{"another owner may not renew", func(t *testing.T, l *locker) int64 {
				mustAcquire(t, l, "r", "svc-a", ttl)
				return 0
			}, "svc-b", leasegate.ErrLockForbidden, true},
			{"the owner with another token may not renew", func(t *testing.T, l *locker) int64 {
				return mustAcquire(t, l, "r", "svc-a", ttl).Token + 1
			}, "svc-a", leasegate.ErrLockForbidden, true},
		}
		for _, tc := range refused {
			t.Run(tc.name, func(t *testing.T) {
				l := newLocker(t, e.RDB, redislock.Config{})
				token := tc.setup(t, l)
				before, _ := l.Status(ctx, "r")
				_, err := l.Renew(ctx, "r", tc.owner, token, 2*ttl)
				if !errors.Is(err, tc.want) {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
				checkLeft(t, l, "r", before, tc.stillUp)
			})
		}

		t.Run("a renewal under a microsecond ttl is refused", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			mustAcquire(t, l, "r", "svc-a", ttl)
			if _, err := l.Renew(ctx, "r", "svc-a", 0, time.Microsecond); err == nil {
				t.Fatalf("got no error, want one")
			}
		})
	})
}

func TestStatus(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()

		t.Run("a resource never locked is not held", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			if _, err := l.Status(ctx, "never"); !errors.Is(err, leasegate.ErrLockNotHeld) {
				t.Errorf("got %v, want ErrLockNotHeld", err)
			}
		})

		t.Run("an expired lease is hidden even while its key still exists", func(t *testing.T) {
			l := newLocker(t, e.RDB, redislock.Config{})
			mustAcquire(t, l, "r", "svc-a", e.stale)
			keepKey(t, e, l, "r")
			e.Advance(t, e.stale+time.Millisecond)
			if _, err := l.Status(ctx, "r"); !errors.Is(err, leasegate.ErrLockNotHeld) {
				t.Errorf("got %v, want ErrLockNotHeld for an expired lease", err)
			}
			if n := e.RDB.Exists(ctx, lockKey(l, "r")).Val(); n != 1 {
				t.Fatalf("got %d lock keys, want the unreaped key still there (the test relies on it)", n)
			}
		})

		t.Run("a lease is shown until the millisecond it expires", func(t *testing.T) {
			if e.Mini == nil {
				t.Skip("needs a clock the test controls")
			}
			l := newLocker(t, e.RDB, redislock.Config{})
			lk := mustAcquire(t, l, "r", "svc-a", time.Second)
			e.Advance(t, 999*time.Millisecond)
			if st, err := l.Status(ctx, "r"); err != nil || st != lk {
				t.Errorf("1ms before expiry: got %+v, %v; want %+v", st, err, lk)
			}
			e.Advance(t, time.Millisecond)
			if _, err := l.Status(ctx, "r"); !errors.Is(err, leasegate.ErrLockNotHeld) {
				t.Errorf("at expires_at: got %v, want ErrLockNotHeld", err)
			}
		})
	})
}

func TestTenantsAreSeparateNamespaces(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		base := newLocker(t, e.RDB, redislock.Config{})
		a, b := base.Tenant("acme"), base.Tenant("globex")
		mustAcquire(t, a, "shared-name", "svc-a", ttl)
		lk := mustAcquire(t, b, "shared-name", "svc-b", ttl)
		if lk.Owner != "svc-b" {
			t.Errorf("got owner %q, want svc-b", lk.Owner)
		}
		if got, err := b.Release(ctx, "shared-name", "svc-a", 0); err != nil || got != leasegate.Forbidden {
			t.Errorf("tenant globex releasing with acme's owner: got %v, %v; want forbidden", got, err)
		}
		if _, err := base.Status(ctx, "shared-name"); !errors.Is(err, leasegate.ErrLockNotHeld) {
			t.Errorf("default tenant: got %v, want ErrLockNotHeld", err)
		}
	})
}

// checkLeft checks what a call left of resource: with stillUp, the lease
// before it exactly as it was; otherwise nothing held.
func checkLeft(t *testing.T, l *locker, resource string, before leasegate.Lock, stillUp bool) {
	t.Helper()
	after, err := l.Status(context.Background(), resource)
	if stillUp {
		if err != nil || after != before {
			t.Errorf("got status %+v, %v; want unchanged %+v", after, err, before)
		}
	} else if !errors.Is(err, leasegate.ErrLockNotHeld) {
		t.Errorf("got status %+v, %v; want ErrLockNotHeld", after, err)
	}
}

// keepKey removes the lock key's TTL so that it outlives its expires_at,
// as a key Redis has not reaped yet would (lazy and active expiry both
// lag). The scripts must then judge expiry by expires_at alone.
func keepKey(t *testing.T, e *engine, l *locker, resource string) {
	t.Helper()
	if ok, err := e.RDB.Persist(context.Background(), lockKey(l, resource)).Result(); err != nil || !ok {
		t.Fatalf("PERSIST %s: %v, %v", lockKey(l, resource), ok, err)
	}
}

func lockKey(l *locker, resource string) string {
	k, _ := l.Keys(resource)
	return k
}

// Every distinct resource string is its own lock: names that look like
// keys, hash tags, other resources' suffixes or SQL share nothing.
func TestOddResourceNamesAreIndependentLocks(t *testing.T) {
	t.Parallel()
	names := []string{
		"a", "{a}", "a:fence", "a:lock", "a b", "ü", "x'; DROP TABLE distributed_locks; --",
		"}", "{", "{}", "a}b{c}", "%7Ba%7D", "a%3Afence", "t=;r=a",
	}
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		prefix := uniquePrefix(t)
		l := newLocker(t, e.RDB, redislock.Config{Prefix: prefix})
		locks := map[string]leasegate.Lock{}
		for i, name := range names {
			locks[name] = mustAcquire(t, l, name, fmt.Sprintf("owner-%d", i), ttl)
		}
		for i, name := range names {
			st, err := l.Status(ctx, name)
			if err != nil {
				t.Fatalf("Status(%q): %v", name, err)
			}
			if want := fmt.Sprintf("owner-%d", i); st.Owner != want || st.Resource != name || st != locks[name] {
				t.Errorf("Status(%q): got %+v, want its own lease %+v", name, st, locks[name])
			}
		}
		mustRelease(t, l, "{a}", "owner-1")
		for i, name := range names {
			_, err := l.Status(ctx, name)
			if name == "{a}" {
				if !errors.Is(err, leasegate.ErrLockNotHeld) {
					t.Errorf("Status(%q) after its release: got %v, want ErrLockNotHeld", name, err)
				}
			} else if err != nil {
				t.Errorf("Status(%q) (owner-%d) after releasing {a}: got %v, want still held", name, i, err)
			}
		}
		// A released lease leaves a tombstone (the token alone): count
		// the lock keys that hold a lease.
		keys, err := e.RDB.Keys(ctx, prefix+"*:lock").Result()
		var held []string
		for _, k := range keys {
			if e.RDB.HExists(ctx, k, "owner").Val() {
				held = append(held, k)
			}
		}
		if err != nil || len(held) != len(names)-1 {
			t.Errorf("got %d lock keys with a lease (%v), want %d, one per held resource: %q", len(held), err, len(names)-1, held)
		}
	})
}
