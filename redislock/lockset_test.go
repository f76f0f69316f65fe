package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/contracttest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// setMode is how a lock set's try runs: one script (a single Redis and
// Sentinel) or one script per member with a rollback (Redis Cluster,
// forced here on one redis-server through SecondStepIndex).
type setMode struct {
	name string
	wrap func(*redislock.Locker) *redislock.Locker
}

var setModes = []setMode{
	{"in one script", func(l *redislock.Locker) *redislock.Locker { return l }},
	{"one member at a time, as on Cluster", redislock.SecondStepIndex},
}

func (l *locker) acquireSet(t *testing.T, owner string, ttl time.Duration, resources ...string) leasegate.LockSetResult {
	t.Helper()
	res, err := l.svc.AcquireSet(context.Background(), l.tenant, leasegate.LockSetRequest{Resources: resources, Owner: owner, TTL: ttl})
	if err != nil {
		t.Fatalf("AcquireSet(%q, %v): %v", owner, resources, err)
	}
	return res
}

// holdsNone fails unless owner holds none of resources.
func holdsNone(t *testing.T, l *locker, owner string, resources ...string) {
	t.Helper()
	for _, r := range resources {
		if lk, err := l.Status(context.Background(), r); err == nil && lk.Owner == owner {
			t.Errorf("%s holds %q after a refused set, want none of it", owner, r)
		}
	}
}

func TestLockSets(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		for _, m := range setModes {
			t.Run(m.name, func(t *testing.T) {
				ctx := context.Background()
				newL := func(t *testing.T) *locker {
					return wrap(m.wrap(redislock.New(e.RDB, redislock.Config{Prefix: uniquePrefix(t)})))
				}

				t.Run("a free set is granted whole, a lease and a token per member", func(t *testing.T) {
					l := newL(t)
					res := l.acquireSet(t, "svc-a", time.Minute, "a", "b", "c")
					if !res.Acquired || len(res.Locks) != 3 {
						t.Fatalf("got %+v, want three leases", res)
					}
					for i, r := range []string{"a", "b", "c"} {
						lk := res.Locks[i]
						if lk.Resource != r || lk.Owner != "svc-a" || lk.Token <= 0 {
							t.Errorf("member %d: got %+v, want svc-a's lease on %q", i, lk, r)
						}
						if st, err := l.Status(ctx, r); err != nil || st != lk {
							t.Errorf("status %q: got %+v, %v; want %+v", r, st, err, lk)
						}
					}
				})

				t.Run("one member held by another owner refuses the set, taking none", func(t *testing.T) {
					l := newL(t)
					held := mustAcquire(t, l, "b", "svc-x", time.Minute)
					res := l.acquireSet(t, "svc-a", time.Minute, "a", "b", "c")
					if res.Acquired || len(res.Held) != 1 || res.Held[0].Resource != "b" ||
						res.Held[0].RetryAfter <= 0 || res.Held[0].RetryAfter > time.Minute {
						t.Fatalf("got %+v, want refused by b with its time left", res)
					}
					holdsNone(t, l, "svc-a", "a", "b", "c")
					if st, err := l.Status(ctx, "b"); err != nil || st != held {
						t.Errorf("got b %+v, %v; want svc-x's lease unchanged", st, err)
					}
				})

				t.Run("a member the owner holds counts as acquired and keeps its token", func(t *testing.T) {
					l := newL(t)
					mine := mustAcquire(t, l, "a", "svc-a", time.Minute)
					res := l.acquireSet(t, "svc-a", 2*time.Minute, "a", "b")
					if !res.Acquired || res.Locks[0].Token != mine.Token || !res.Locks[0].ExpiresAt.After(mine.ExpiresAt) {
						t.Fatalf("got %+v, want a renewed with token %d", res, mine.Token)
					}
				})

				t.Run("a member in another owner's lock delay refuses the set", func(t *testing.T) {
					l := newL(t)
					if _, err := l.svc.Acquire(ctx, "", leasegate.AcquireRequest{Resource: "d", Owner: "svc-x", TTL: e.stale, LockDelay: time.Minute}); err != nil {
						t.Fatal(err)
					}
					e.Advance(t, e.stale+time.Millisecond)
					res := l.acquireSet(t, "svc-a", time.Minute, "c", "d")
					if res.Acquired || len(res.Held) != 1 || !res.Held[0].Delayed {
						t.Fatalf("got %+v, want refused by d's lock delay", res)
					}
					holdsNone(t, l, "svc-a", "c", "d")
				})

				t.Run("a set with a lock delay keeps every member after an expiry", func(t *testing.T) {
					l := newL(t)
					res, err := l.svc.AcquireSet(ctx, "", leasegate.LockSetRequest{Resources: []string{"p", "q"}, Owner: "svc-a", TTL: e.stale, LockDelay: time.Minute})
					if err != nil || !res.Acquired {
						t.Fatalf("got %+v, %v", res, err)
					}
					e.Advance(t, e.stale+time.Millisecond)
					for _, r := range []string{"p", "q"} {
						if got, _ := l.Acquire(ctx, r, "svc-b", time.Minute); got.Acquired || !got.Delayed {
							t.Errorf("%s: got %+v, want refused by the set's lock delay", r, got)
						}
					}
				})

				t.Run("releasing a set ends the owner's leases and names the others", func(t *testing.T) {
					l := newL(t)
					l.acquireSet(t, "svc-a", time.Minute, "a", "b")
					mustAcquire(t, l, "c", "svc-x", time.Minute)
					got, err := l.svc.ReleaseSet(ctx, "", "svc-a", []string{"a", "b", "c", "none"})
					if err != nil {
						t.Fatal(err)
					}
					if fmt.Sprint(got.Released) != "[a b]" || fmt.Sprint(got.NotHeld) != "[c none]" {
						t.Errorf("got released %v not held %v, want [a b] and [c none]", got.Released, got.NotHeld)
					}
					holdsNone(t, l, "svc-a", "a", "b")
					if res := l.acquireSet(t, "svc-b", time.Minute, "a", "b"); !res.Acquired {
						t.Errorf("got %+v, want the released members free", res)
					}
				})

				t.Run("a set naming no resource, too many or one twice is refused", func(t *testing.T) {
					l := newL(t)
					many := make([]string, leasegate.MaxLockSet+1)
					for i := range many {
						many[i] = fmt.Sprint("r", i)
					}
					for _, rs := range [][]string{nil, many, {"a", "a"}} {
						_, err := l.svc.AcquireSet(ctx, "", leasegate.LockSetRequest{Resources: rs, Owner: "svc-a", TTL: time.Minute})
						if !errors.Is(err, redislock.ErrBadLockSet) {
							t.Errorf("%d resources: got %v, want ErrBadLockSet", len(rs), err)
						}
					}
				})
			})
		}
	})
}

// TestLockSetsUnderConcurrencyLeaveNoPartialHold: owners race for
// overlapping sets; after every answer an owner told "acquired" holds the
// whole set (no one else holds a member) and one told "refused" holds
// none of it, in both modes.
func TestLockSetsUnderConcurrencyLeaveNoPartialHold(t *testing.T) {
	t.Parallel()
	b := redistest.OnRedis(t)
	for _, m := range setModes {
		t.Run(m.name, func(t *testing.T) {
			l := wrap(m.wrap(redislock.New(b.RDB, redislock.Config{Prefix: uniquePrefix(t)})))
			raceSets(t, l, 8, 40)
		})
	}
}

// raceSets runs workers owners, each trying rounds sets of 2..4 of 6
// resources and checking the answer against what Redis then holds.
func raceSets(t *testing.T, l *locker, workers, rounds int) {
	t.Helper()
	ctx := context.Background()
	names := []string{"r0", "r1", "r2", "r3", "r4", "r5"}
	var granted, refused atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprint("w", w)
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range rounds {
				perm := rng.Perm(len(names))
				set := make([]string, 2+rng.IntN(3))
				for i := range set {
					set[i] = names[perm[i]]
				}
				res, err := l.svc.AcquireSet(ctx, "", leasegate.LockSetRequest{Resources: set, Owner: owner, TTL: time.Minute})
				if err != nil {
					t.Errorf("%s: %v", owner, err)
					return
				}
				if !res.Acquired {
					refused.Add(1)
					holdsNone(t, l, owner, set...)
					continue
				}
				granted.Add(1)
				for _, r := range set {
					if st, err := l.Status(ctx, r); err != nil || st.Owner != owner {
						t.Errorf("%s was granted %v but %q is %+v, %v", owner, set, r, st, err)
					}
				}
				rel, err := l.svc.ReleaseSet(ctx, "", owner, set)
				if err != nil || len(rel.Released) != len(set) {
					t.Errorf("%s: release %v: got %+v, %v; want all released", owner, set, rel, err)
				}
			}
		}()
	}
	wg.Wait()
	if granted.Load() == 0 || refused.Load() == 0 {
		t.Errorf("granted %d, refused %d: want both to happen, or the race tested nothing", granted.Load(), refused.Load())
	}
}

// failOn is a Scripter that fails every script call whose keys include a
// key containing marker, as a Cluster node that stops answering would.
type failOn struct {
	*redis.Client
	marker string
}

func (f failOn) hit(keys []string) bool {
	for _, k := range keys {
		if strings.Contains(k, f.marker) {
			return true
		}
	}
	return false
}

func (f failOn) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if f.hit(keys) {
		c := redis.NewCmd(ctx)
		c.SetErr(errors.New("i/o timeout (injected)"))
		return c
	}
	return f.Client.EvalSha(ctx, sha, keys, args...)
}

func (f failOn) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	if f.hit(keys) {
		c := redis.NewCmd(ctx)
		c.SetErr(errors.New("i/o timeout (injected)"))
		return c
	}
	return f.Client.Eval(ctx, src, keys, args...)
}

// TestLockSetOnClusterRollsBackWhenRedisFailsMidway: one member at a
// time, the third member's node fails: the answer is unavailable, and the
// two members granted before it are released before the answer.
func TestLockSetOnClusterRollsBackWhenRedisFailsMidway(t *testing.T) {
	t.Parallel()
	b := redistest.OnRedis(t)
	prefix := uniquePrefix(t)
	broken := wrap(redislock.SecondStepIndex(redislock.New(failOn{b.RDB, "r=m3}"}, redislock.Config{Prefix: prefix})))
	healthy := wrap(redislock.New(b.RDB, redislock.Config{Prefix: prefix}))
	_, err := broken.svc.AcquireSet(context.Background(), "", leasegate.LockSetRequest{
		Resources: []string{"m1", "m2", "m3", "m4"}, Owner: "svc-a", TTL: time.Minute})
	if !errors.Is(err, leasegate.ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	holdsNone(t, healthy, "svc-a", "m1", "m2", "m3", "m4")
	if res := healthy.acquireSet(t, "svc-b", time.Minute, "m1", "m2", "m4"); !res.Acquired {
		t.Errorf("got %+v, want the rolled-back members free", res)
	}
}

// TestOverlappingWaitingSetsDoNotDeadlock: two sets wait for the same two
// resources named in opposite orders while a third owner holds one; when
// it releases, both are granted in turn (each releases at once), and
// while they wait neither holds the free member.
func TestOverlappingWaitingSetsDoNotDeadlock(t *testing.T) {
	t.Parallel()
	for _, m := range setModes {
		t.Run(m.name, func(t *testing.T) {
			r := newRealWaitRig(t, redislock.WaiterOptions{})
			l := wrap(m.wrap(r.l.Locker))
			svc := redislock.NewService(m.wrap(r.l.Locker), r.w)
			ctx := context.Background()
			mustAcquire(t, r.l, "x", "holder", time.Minute)
			type answer struct {
				res leasegate.LockSetResult
				err error
			}
			answers := make(chan answer, 2)
			for _, set := range [][]string{{"x", "y"}, {"y", "x"}} {
				owner := "set-" + set[0]
				go func() {
					res, err := svc.AcquireSet(ctx, "", leasegate.LockSetRequest{Resources: set, Owner: owner, TTL: time.Minute, Wait: 10 * time.Second})
					if err == nil && res.Acquired {
						_, err = svc.ReleaseSet(ctx, "", owner, set)
					}
					answers <- answer{res, err}
				}()
			}
			// A set counts among the Waiter's waiting before its first try;
			// only a refused try enters it among x's waiters in Redis. x is
			// released once both were refused, so both must wait.
			_, xWaiters := m.wrap(r.l.Locker).Keys("x")
			redistest.Eventually(t, 5*time.Second, "both sets refused and waiting", func() bool {
				return r.w.Waiting() == 2 && r.RDB.HLen(ctx, xWaiters).Val() == 2
			})
			if st, err := l.Status(ctx, "y"); err == nil {
				t.Errorf("y is held by %q while both sets wait, want free (no partial hold)", st.Owner)
			}
			r.release(t, "x", "holder")
			for range 2 {
				a := <-answers
				if a.err != nil || !a.res.Acquired || !a.res.Waited {
					t.Errorf("got %+v, %v; want granted after waiting", a.res, a.err)
				}
			}
		})
	}
}

// TestLockSetsOnRealCluster: members spread over three masters, owners
// racing for overlapping sets; no answer leaves a partial hold.
func TestLockSetsOnRealCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	rc := cl.Client(t)
	l := wrap(redislock.New(rc, redislock.Config{Prefix: uniquePrefix(t)}))
	masters := map[string]bool{}
	for _, r := range []string{"r0", "r1", "r2", "r3", "r4", "r5"} {
		k, _ := l.Keys(r)
		masters[masterOf(t, rc, k)] = true
	}
	if len(masters) < 2 {
		t.Fatalf("the members sit on %d master(s), want a set that spans masters", len(masters))
	}
	raceSets(t, l, 8, 30)

	t.Run("the lock-set contract", func(t *testing.T) {
		contracttest.LockSets(t, func(t *testing.T) contracttest.LockSetBackend {
			prefix := uniquePrefix(t)
			w := redislock.NewWaiter(rc, redislock.WaiterOptions{Channel: prefix + "released"})
			t.Cleanup(w.Close)
			svc := redislock.NewService(redislock.New(rc, redislock.Config{Prefix: prefix, ReleaseChannel: prefix + "released"}), w)
			return contracttest.LockSetBackend{Sets: svc, Locks: svc, Advance: func(t *testing.T, d time.Duration) {
				now, err := rc.Time(context.Background()).Result()
				if err != nil {
					t.Fatalf("TIME: %v", err)
				}
				target := now.Add(d)
				redistest.Eventually(t, d+10*time.Second, "the Redis clock has advanced", func() bool {
					now, err := rc.Time(context.Background()).Result()
					return err == nil && !now.Before(target)
				})
			}}
		})
	})
}

// TestLockSetMembersAreOrdinaryLocks: the listing shows a set's members
// as leases, and a member's event watcher sees it acquired and released
// by the set, in both modes.
func TestLockSetMembersAreOrdinaryLocks(t *testing.T) {
	t.Parallel()
	for _, m := range setModes {
		t.Run(m.name, func(t *testing.T) {
			r := newRealWaitRig(t, redislock.WaiterOptions{})
			lk := m.wrap(r.l.Locker)
			svc := redislock.NewService(lk, r.w)
			o := redislock.NewOperator(r.RDB, lk, r.w, redislock.OperatorOptions{WatchPoll: 20 * time.Millisecond})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			events := make(chan leasegate.LockEvent, 16)
			watched := make(chan error, 1)
			go func() { watched <- o.Watch(ctx, "", "m2", events) }()
			next := func(want leasegate.LockEventKind) {
				t.Helper()
				select {
				case ev := <-events:
					if ev.Kind != want {
						t.Fatalf("got event %q, want %q", ev.Kind, want)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("no %q event within 10s", want)
				}
			}
			next(leasegate.EventState)
			res, err := svc.AcquireSet(ctx, "", leasegate.LockSetRequest{Resources: []string{"m1", "m2"}, Owner: "svc-a", TTL: time.Minute})
			if err != nil || !res.Acquired {
				t.Fatalf("AcquireSet: %+v, %v", res, err)
			}
			// An acquire publishes nothing: the watcher's poll sees it.
			next(leasegate.EventAcquired)
			page, err := o.List(ctx, "", "m", "", 10)
			if err != nil || len(page.Items) != 2 || page.Items[0].Resource != "m1" || page.Items[1].Resource != "m2" {
				t.Errorf("listing: got %+v, %v; want m1 and m2", page, err)
			}
			if _, err := svc.ReleaseSet(ctx, "", "svc-a", []string{"m1", "m2"}); err != nil {
				t.Fatal(err)
			}
			next(leasegate.EventReleased)
			cancel()
			<-watched
		})
	}
}

// TestAWaitingSetDoesNotStarveBehindAStreamOfSingleLocks: single-lock
// callers cycle x and y without pause, some waiting, some retrying at
// once without wait_ms, so both are free at once only if the lines keep
// them for the set. A set [x, y] that starts waiting among them stands
// in both lines (single Redis) and is granted once it stands first in
// both, while the stream goes on.
func TestAWaitingSetDoesNotStarveBehindAStreamOfSingleLocks(t *testing.T) {
	t.Parallel()
	r := newRealWaitRig(t, redislock.WaiterOptions{})
	svc := redislock.NewService(r.l.Locker, r.w)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var grants atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		resource := []string{"x", "y"}[i%2]
		owner := fmt.Sprintf("single-%d", i)
		wait := time.Duration(i/4) * 30 * time.Second // 4 poll, 4 wait
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				res, err := svc.Acquire(ctx, "", leasegate.AcquireRequest{Resource: resource, Owner: owner, TTL: time.Minute, Wait: wait})
				if err != nil || !res.Acquired {
					continue // at once: a poller takes any gap
				}
				grants.Add(1)
				sleepCtx(ctx, 5*time.Millisecond)
				_, _ = svc.Release(context.WithoutCancel(ctx), "", resource, owner, res.Lock.Token)
			}
		}()
	}
	redistest.Eventually(t, 10*time.Second, "the stream has started", func() bool { return grants.Load() >= 20 })
	before := grants.Load()
	res, err := svc.AcquireSet(ctx, "", leasegate.LockSetRequest{Resources: []string{"x", "y"}, Owner: "set", TTL: time.Minute, Wait: 10 * time.Second})
	if err != nil || !res.Acquired {
		t.Fatalf("got %+v, %v; want the set granted within its wait while the stream runs", res, err)
	}
	// Only the waiters ahead of it in either line (at most the four
	// waiting singles and the two holders) go first; without the lines
	// the pollers take every gap and the set waits for a lucky instant.
	if n := grants.Load() - before; n > 20 {
		t.Errorf("granted after %d single grants of the stream, want those ahead of it only (at most 20)", n)
	} else {
		t.Logf("granted after %d single grants of the stream", n)
	}
	if _, err := svc.ReleaseSet(ctx, "", "set", []string{"x", "y"}); err != nil {
		t.Error(err)
	}
	stop()
	wg.Wait()
}

// sleepCtx sleeps d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// TestAWaitingSetIsAnsweredShuttingDownOnClose: a lock set waiting when
// the gateway shuts down is told to retry elsewhere (ErrShuttingDown, a
// 503 with Retry-After), as single waiters are, not answered contended.
func TestAWaitingSetIsAnsweredShuttingDownOnClose(t *testing.T) {
	t.Parallel()
	r := newRealWaitRig(t, redislock.WaiterOptions{})
	svc := redislock.NewService(r.l.Locker, r.w)
	mustAcquire(t, r.l, "x", "holder", time.Minute)
	type answer struct {
		res leasegate.LockSetResult
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		res, err := svc.AcquireSet(context.Background(), "", leasegate.LockSetRequest{Resources: []string{"x", "y"}, Owner: "set", TTL: time.Minute, Wait: 30 * time.Second})
		answers <- answer{res, err}
	}()
	_, xWaiters := r.l.Locker.Keys("x")
	redistest.Eventually(t, 10*time.Second, "the set refused and waiting", func() bool {
		return r.w.Waiting() == 1 && r.RDB.HLen(context.Background(), xWaiters).Val() == 1
	})
	r.w.Close()
	select {
	case a := <-answers:
		if !errors.Is(a.err, leasegate.ErrShuttingDown) || a.res.Acquired {
			t.Errorf("got %+v, %v; want %v", a.res, a.err, leasegate.ErrShuttingDown)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting set got no answer within 10s of Close")
	}
}
