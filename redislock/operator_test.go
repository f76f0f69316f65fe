package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/redislock"
)

func listAll(t *testing.T, o *redislock.Operator, tenant, prefix string, limit int) []leasegate.HeldLock {
	t.Helper()
	var out []leasegate.HeldLock
	cursor := ""
	for i := 0; i < 1000; i++ {
		p, err := o.List(context.Background(), tenant, prefix, cursor, limit)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		out = append(out, p.Items...)
		if p.NextCursor == "" {
			return out
		}
		cursor = p.NextCursor
	}
	t.Fatal("List: no last page after 1000 pages")
	return nil
}

func names(items []leasegate.HeldLock) []string {
	var out []string
	for _, h := range items {
		out = append(out, h.Resource)
	}
	return out
}

func TestListShowsLiveLeasesInResourceOrderByPrefix(t *testing.T) {
	t.Parallel()
	for mode, secondStep := range []bool{false, true} {
		forEachEngine(t, func(t *testing.T, e *engine) {
			l := newLocker(t, e.RDB, redislock.Config{})
			if secondStep {
				l = wrap(redislock.SecondStepIndex(l.Locker))
			}
			o := redislock.NewOperator(e.RDB, l.Locker, nil, redislock.OperatorOptions{})
			for _, r := range []string{"b", "a2", "a1", "a10", "ab", "c", "ä"} {
				mustAcquire(t, l, r, "o-"+r, ttl)
			}
			mustAcquire(t, l.Tenant("other"), "a3", "x", ttl)
			got := fmt.Sprint(names(listAll(t, o, "", "a", 2)))
			if want := "[a1 a10 a2 ab]"; got != want {
				t.Errorf("mode %d: prefix a: got %s, want %s", mode, got, want)
			}
			got = fmt.Sprint(names(listAll(t, o, "", "", 3)))
			if want := "[a1 a10 a2 ab b c ä]"; got != want {
				t.Errorf("mode %d: everything: got %s, want %s", mode, got, want)
			}
			if got := names(listAll(t, o, "other", "", 10)); fmt.Sprint(got) != "[a3]" {
				t.Errorf("tenant other: got %v, want [a3]", got)
			}
			mustRelease(t, l, "a2", "o-a2")
			if got := fmt.Sprint(names(listAll(t, o, "", "a", 100))); got != "[a1 a10 ab]" {
				t.Errorf("after a release: got %s, want [a1 a10 ab]", got)
			}
			page, err := o.List(context.Background(), "", "", "", 100)
			if err != nil || len(page.Items) == 0 || page.Items[0].Owner != "o-a1" || page.Items[0].Token == 0 {
				t.Errorf("got %+v, %v; want a1's lease with owner and token", page, err)
			}
		})
	}
}

// TestListUnderChurn pages while short leases expire and are taken again:
// a listed lease is never expired, and every lease held throughout is on
// exactly one page.
func TestListUnderChurn(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		l := newLocker(t, e.RDB, redislock.Config{})
		o := redislock.NewOperator(e.RDB, l.Locker, nil, redislock.OperatorOptions{})
		short := 40 * time.Millisecond
		held := map[string]bool{}
		for i := 0; i < 30; i++ {
			r := fmt.Sprintf("r%02d", i)
			if i%3 == 0 {
				mustAcquire(t, l, r, "keeper", time.Hour)
				held[r] = true
			} else {
				mustAcquire(t, l, r, "churn", short)
			}
		}
		seen := map[string]int{}
		cursor := ""
		for page := 0; ; page++ {
			before := redisNow(t, e.RDB)
			p, err := o.List(ctx, "", "r", cursor, 4)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range p.Items {
				seen[h.Resource]++
				if !h.ExpiresAt.After(before) {
					t.Errorf("page %d lists %s, expired at %v (before %v)", page, h.Resource, h.ExpiresAt, before)
				}
			}
			// Churn: time passes, short leases expire, some are taken again.
			e.Advance(t, short/2)
			for i := page; i < 30; i += 7 {
				r := fmt.Sprintf("r%02d", i)
				if !held[r] {
					if _, err := l.Acquire(ctx, r, "churn", short); err != nil {
						t.Fatal(err)
					}
				}
			}
			if p.NextCursor == "" {
				break
			}
			cursor = p.NextCursor
		}
		for r := range held {
			if seen[r] != 1 {
				t.Errorf("%s, held throughout, was listed %d times, want once", r, seen[r])
			}
		}
	})
}

// An ended lease's key stays (as the fence), so "stale" must come from
// expires_at, not from the key.
func TestStaleIndexEntriesArePrunedAndSwept(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		prefix := uniquePrefix(t)
		l := wrap(redislock.New(e.RDB, redislock.Config{Prefix: prefix}))
		var expired atomic.Int64
		o := redislock.NewOperator(e.RDB, l.Locker, nil, redislock.OperatorOptions{OnExpired: func(string, string) { expired.Add(1) }})
		for i := 0; i < 20; i++ {
			mustAcquire(t, l, fmt.Sprint("s", i), "o", e.stale)
		}
		mustAcquire(t, l, "released", "o", ttl)
		mustRelease(t, l, "released", "o")
		mustAcquire(t, l, "live", "o", ttl)
		idx := keyspace.Space{Prefix: prefix}.LockIndex("")
		if n := e.RDB.ZCard(ctx, idx).Val(); n != 21 {
			t.Fatalf("index has %d entries, want 21 (a release takes its own out, expiries leave theirs)", n)
		}
		e.Advance(t, e.stale+time.Millisecond)
		swept, err := o.Sweep(ctx, "", 7)
		if err != nil || swept.Removed != 20 || swept.Held != 1 {
			t.Errorf("Sweep: got %+v, %v; want 20 removed and 1 held", swept, err)
		}
		if got := e.RDB.ZRange(ctx, idx, 0, -1).Val(); fmt.Sprint(got) != "[live]" {
			t.Errorf("index after the sweep: %v, want [live]", got)
		}
		if n := expired.Load(); n != 20 {
			t.Errorf("OnExpired told of %d expiries, want 20", n)
		}
	})
}

func TestForceRelease(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		l := newLocker(t, e.RDB, redislock.Config{})
		o := redislock.NewOperator(e.RDB, l.Locker, nil, redislock.OperatorOptions{})
		lk := mustAcquire(t, l, "stuck", "worker-1", ttl)
		got, err := o.ForceRelease(ctx, "", "stuck", "test", leasegate.RequestMeta{})
		if err != nil || got.Owner != "worker-1" || got.Token != lk.Token {
			t.Fatalf("ForceRelease: got %+v, %v; want worker-1's lease", got, err)
		}
		if _, err := l.Renew(ctx, "stuck", "worker-1", lk.Token, ttl); !errors.Is(err, leasegate.ErrLockNotHeld) {
			t.Errorf("the former holder's renew: got %v, want ErrLockNotHeld", err)
		}
		if r, err := l.Release(ctx, "stuck", "worker-1", lk.Token); err != nil || r != leasegate.NotFound {
			t.Errorf("the former holder's release: got %v, %v; want NotFound", r, err)
		}
		next := mustAcquire(t, l, "stuck", "worker-2", ttl)
		if next.Token <= lk.Token {
			t.Errorf("next token %d, want above the burnt %d", next.Token, lk.Token)
		}
		if _, err := o.ForceRelease(ctx, "", "free", "test", leasegate.RequestMeta{}); !errors.Is(err, leasegate.ErrLockNotHeld) {
			t.Errorf("nothing held: got %v, want ErrLockNotHeld", err)
		}
		if _, err := o.ForceRelease(ctx, "other", "stuck", "test", leasegate.RequestMeta{}); !errors.Is(err, leasegate.ErrLockNotHeld) {
			t.Errorf("another tenant: got %v, want ErrLockNotHeld", err)
		}

		// A lease past its expires_at whose key Redis has not reaped yet is
		// not held: nothing to release, and the next grant still gets a
		// larger token.
		old := mustAcquire(t, l, "lapsed", "worker-1", e.stale)
		keepKey(t, e, l, "lapsed")
		e.Advance(t, e.stale+time.Millisecond)
		if _, err := o.ForceRelease(ctx, "", "lapsed", "test", leasegate.RequestMeta{}); !errors.Is(err, leasegate.ErrLockNotHeld) {
			t.Errorf("an expired lease Redis has not reaped: got %v, want ErrLockNotHeld", err)
		}
		if n, err := e.RDB.Exists(ctx, lockKey(l, "lapsed")).Result(); err != nil || n != 1 {
			t.Fatalf("the lapsed lease's key: EXISTS %d, %v; want it still there (kept past its expiry)", n, err)
		}
		if next := mustAcquire(t, l, "lapsed", "worker-2", ttl); next.Token <= old.Token {
			t.Errorf("next token %d, want above the lapsed %d", next.Token, old.Token)
		}
	})
}

// TestForceReleaseRacingARenew: whatever the interleaving, a renew never
// revives a force-released lease, and a later acquire gets a larger token.
func TestForceReleaseRacingARenew(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		l := newLocker(t, e.RDB, redislock.Config{})
		o := redislock.NewOperator(e.RDB, l.Locker, nil, redislock.OperatorOptions{})
		for i := 0; i < 30; i++ {
			r := fmt.Sprint("race", i)
			lk := mustAcquire(t, l, r, "holder", ttl)
			var wg sync.WaitGroup
			start := make(chan struct{})
			var forced error
			renewed := make([]error, 4)
			for j := range renewed {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, renewed[j] = l.Renew(ctx, r, "holder", lk.Token, ttl)
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, forced = o.ForceRelease(ctx, "", r, "test", leasegate.RequestMeta{})
			}()
			close(start)
			wg.Wait()
			if forced != nil {
				t.Fatalf("ForceRelease: %v", forced)
			}
			for _, err := range renewed {
				if err != nil && !errors.Is(err, leasegate.ErrLockNotHeld) {
					t.Errorf("renew: %v, want success or ErrLockNotHeld", err)
				}
			}
			if _, err := l.Status(ctx, r); !errors.Is(err, leasegate.ErrLockNotHeld) {
				t.Errorf("%s after the race: got %v, want ErrLockNotHeld", r, err)
			}
			if _, err := l.Renew(ctx, r, "holder", lk.Token, ttl); !errors.Is(err, leasegate.ErrLockNotHeld) {
				t.Errorf("a renew after the race: got %v, want ErrLockNotHeld", err)
			}
			if next := mustAcquire(t, l, r, "other", ttl); next.Token <= lk.Token {
				t.Errorf("token %d after force-release of %d", next.Token, lk.Token)
			}
		}
	})
}

// TestListCountsWaitingAcquiresNotWatchers: the waiters come from the
// resource's waiters hash, fleet-wide: one per live ticket (a deadline
// ahead of the Redis clock); an event watcher's entry there is not a
// waiter, nor is a dead ticket.
func TestListCountsWaitingAcquiresNotWatchers(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		prefix := uniquePrefix(t)
		l := newLocker(t, e.RDB, redislock.Config{Prefix: prefix, ReleaseChannel: prefix + "released"})
		o := redislock.NewOperator(e.RDB, l.Locker, nil, redislock.OperatorOptions{})
		mustAcquire(t, l, "busy", "holder", ttl)
		for _, id := range []string{"w1", "w2"} {
			if r, err := l.TryAsWaiter(ctx, "busy", "waiter-"+id, ttl); err != nil || r.Acquired {
				t.Fatalf("contended try: %+v, %v", r, err)
			}
		}
		waiters := keyspace.Space{Prefix: prefix}.Resource("", "busy").Waiters()
		for field, value := range map[string]string{"watch-x": "w", "q:dead": "1", "junk": "x1"} {
			if err := e.RDB.HSet(ctx, waiters, field, value).Err(); err != nil {
				t.Fatal(err)
			}
		}
		p, err := o.List(ctx, "", "busy", "", 10)
		if err != nil || len(p.Items) != 1 || p.Items[0].Waiters != 2 {
			t.Errorf("got %+v, %v; want busy with 2 waiters", p, err)
		}
	})
}

// TestListCountsEveryRequestWaitingOnAGateway: only the head of a
// gateway's queue for a resource tries, and so registers, but its entry
// stands for the whole queue: 5 requests waiting on one Waiter list as 5
// waiters, and 3 on one Waiter and 2 on another (two gateways on one
// Redis) as 5, once each head has tried again (every PollInterval
// without a subscription).
func TestListCountsEveryRequestWaitingOnAGateway(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx, cancel := context.WithCancel(context.Background())
		prefix := uniquePrefix(t)
		l := newLocker(t, e.RDB, redislock.Config{Prefix: prefix, ReleaseChannel: prefix + "released", OpTimeout: time.Second})
		o := redislock.NewOperator(e.RDB, l.Locker, nil, redislock.OperatorOptions{})
		mustAcquire(t, l, "one", "holder", time.Hour)
		mustAcquire(t, l, "two", "holder", time.Hour)
		var wg sync.WaitGroup
		t.Cleanup(func() { cancel(); wg.Wait() })
		wait := func(svc *redislock.Service, resource string, n int) {
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _ = svc.Acquire(ctx, "", leasegate.AcquireRequest{Resource: resource, Owner: fmt.Sprintf("waiter-%p-%d", svc, i), TTL: time.Minute, Wait: time.Minute})
				}()
			}
		}
		gateway := func() *redislock.Service {
			w := redislock.NewWaiter(nil, redislock.WaiterOptions{PollInterval: 10 * time.Millisecond})
			t.Cleanup(w.Close)
			return redislock.NewService(l.Locker, w)
		}
		waitersListed := func(resource string, want int) {
			t.Helper()
			got := -1
			for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
				p, err := o.List(context.Background(), "", resource, "", 10)
				if err != nil || len(p.Items) != 1 {
					t.Fatalf("List: %+v, %v", p, err)
				}
				if got = p.Items[0].Waiters; got == want {
					return
				}
				runtime.Gosched()
			}
			t.Fatalf("%s: listed %d waiters, want %d", resource, got, want)
		}
		a, b := gateway(), gateway()
		wait(a, "one", 5)
		waitersListed("one", 5)
		wait(a, "two", 3)
		wait(b, "two", 2)
		waitersListed("two", 5)
		cancel()
		wg.Wait()
		waitersListed("one", 0)
		waitersListed("two", 0)
	})
}

// TestAFailedIndexSecondStepIsReportedAndTheGrantStands: when the second
// step cannot add a new grant (here the index key holds a string), the
// lease is still granted and OnIndexFailure is told, once per grant.
func TestAFailedIndexSecondStepIsReportedAndTheGrantStands(t *testing.T) {
	t.Parallel()
	e := newMiniEngine(t)
	var failed atomic.Int64
	prefix := uniquePrefix(t)
	l := wrap(redislock.SecondStepIndex(redislock.New(e.RDB, redislock.Config{Prefix: prefix,
		OnIndexFailure: func() { failed.Add(1) }})))
	index := keyspace.Space{Prefix: prefix}.LockIndex("")
	if err := e.RDB.Set(context.Background(), index, "not a zset", 0).Err(); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, l, "a", "o", ttl)
	if got := failed.Load(); got != 1 {
		t.Errorf("index failures: got %d, want 1", got)
	}
}
