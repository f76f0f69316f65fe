package redislock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/election"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/semaphore"
)

// cycler is one gateway's engine as a worker loop sees it: take name
// (waiting), hold, give it back.
// It returns the names it holds.
type cycler func(ctx context.Context, owner string, names []string) (held []string, release func() error, err error)

// Workers that come back to names they just released, at random, are
// handed each name as soon as it is free, on one gateway and on three
// sharing one Redis: a release wakes the waiter Redis grants next,
// whichever gateway and whichever place in its gateway's queue it has.
// A hand-off is timed from the release to the grant of a waiter that
// was waiting when the release started. With wake-ups going to each
// gateway's oldest local waiter, a waiter that Redis put first but its
// gateway did not waited for its renewal tick (TicketRenew, 1 s), and the
// name collected the other workers.
func TestWorkersReturningToNamesAreHandedThemPromptly(t *testing.T) {
	const (
		workers  = 16
		names    = 4
		hold     = time.Millisecond
		run      = 1500 * time.Millisecond
		wait     = 3 * time.Second
		slowest  = 500 * time.Millisecond
		setNames = 2
	)
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	kinds := []struct {
		name string
		// gateway builds one gateway's engine on prefix, with its Waiter.
		gateway func(t *testing.T, prefix string, w *redislock.Waiter) cycler
	}{
		{"locks", func(t *testing.T, prefix string, w *redislock.Waiter) cycler {
			l := redislock.New(rdb, redislock.Config{Prefix: prefix, ReleaseChannel: prefix + "released"})
			svc := redislock.NewService(l, w)
			return func(ctx context.Context, owner string, ns []string) ([]string, func() error, error) {
				res, err := svc.Acquire(ctx, "", leasegate.AcquireRequest{Resource: ns[0], Owner: owner, TTL: time.Minute, Wait: wait})
				if err != nil || !res.Acquired {
					return nil, nil, fmt.Errorf("%+v, %v", res, err)
				}
				return ns[:1], func() error { _, err := svc.Release(ctx, "", ns[0], owner, res.Lock.Token); return err }, nil
			}
		}},
		{"lock sets", func(t *testing.T, prefix string, w *redislock.Waiter) cycler {
			l := redislock.New(rdb, redislock.Config{Prefix: prefix, ReleaseChannel: prefix + "released"})
			svc := redislock.NewService(l, w)
			return func(ctx context.Context, owner string, ns []string) ([]string, func() error, error) {
				set := ns[:setNames]
				res, err := svc.AcquireSet(ctx, "", leasegate.LockSetRequest{Resources: set, Owner: owner, TTL: time.Minute, Wait: wait})
				if err != nil || !res.Acquired {
					return nil, nil, fmt.Errorf("%+v, %v", res, err)
				}
				return set, func() error { _, err := svc.ReleaseSet(ctx, "", owner, set); return err }, nil
			}
		}},
		{"semaphores", func(t *testing.T, prefix string, w *redislock.Waiter) cycler {
			svc := semaphore.New(rdb, w, redislock.Config{Prefix: prefix, ReleaseChannel: prefix + "released"})
			return func(ctx context.Context, owner string, ns []string) ([]string, func() error, error) {
				res, err := svc.Acquire(ctx, "", leasegate.SemaphoreRequest{Name: ns[0], Owner: owner, TTL: time.Minute, Limit: 2, Wait: wait})
				if err != nil || !res.Acquired {
					return nil, nil, fmt.Errorf("%+v, %v", res, err)
				}
				return ns[:1], func() error { _, err := svc.Release(ctx, "", ns[0], owner, res.Permit.Token); return err }, nil
			}
		}},
		{"elections", func(t *testing.T, prefix string, w *redislock.Waiter) cycler {
			svc := election.New(rdb, nil, w, election.Options{Config: redislock.Config{Prefix: prefix, ReleaseChannel: prefix + "released"}})
			return func(ctx context.Context, owner string, ns []string) ([]string, func() error, error) {
				res, err := svc.Campaign(ctx, "", leasegate.CampaignRequest{Name: ns[0], Candidate: owner, TTL: time.Minute, Wait: wait})
				if err != nil || !res.Elected {
					return nil, nil, fmt.Errorf("%+v, %v", res, err)
				}
				return ns[:1], func() error { return svc.Resign(ctx, "", ns[0], owner, res.Leadership.Term) }, nil
			}
		}},
	}
	for _, kind := range kinds {
		for _, gateways := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s, %d gateways", kind.name, gateways), func(t *testing.T) {
				prefix := fmt.Sprintf("ret:%d:", time.Now().UnixNano())
				var gws []cycler
				for range gateways {
					w := redislock.NewWaiter(rdb, redislock.WaiterOptions{Channel: prefix + "released"})
					t.Cleanup(w.Close)
					waitActive(t, w)
					gws = append(gws, kind.gateway(t, prefix, w))
				}
				var (
					mu       sync.Mutex
					took     []time.Duration // acquires
					handoffs []time.Duration
					released = map[string]time.Time{} // by name: when its last release started
					wg       sync.WaitGroup
					start    = time.Now()
				)
				for i := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						cycle, owner := gws[i%gateways], fmt.Sprint("worker-", i)
						for time.Since(start) < run {
							ns := make([]string, 0, names)
							for _, n := range rand.Perm(names) {
								ns = append(ns, fmt.Sprint("name-", n))
							}
							began := time.Now()
							held, release, err := cycle(t.Context(), owner, ns)
							if err != nil {
								t.Errorf("%s on %v: %v", owner, ns[0], err)
								return
							}
							granted := time.Now()
							mu.Lock()
							took = append(took, granted.Sub(began))
							var last time.Time
							for _, n := range held {
								if r := released[n]; r.After(began) && r.After(last) {
									last = r
								}
							}
							if !last.IsZero() {
								handoffs = append(handoffs, granted.Sub(last))
							}
							mu.Unlock()
							time.Sleep(hold)
							mu.Lock()
							for _, n := range held {
								released[n] = time.Now()
							}
							mu.Unlock()
							if err := release(); err != nil {
								t.Errorf("%s: release: %v", owner, err)
								return
							}
						}
					}()
				}
				wg.Wait()
				elapsed := time.Since(start)
				slices.Sort(took)
				slices.Sort(handoffs)
				if len(took) == 0 || len(handoffs) == 0 {
					t.Fatalf("%d cycles, %d hand-offs completed", len(took), len(handoffs))
				}
				t.Logf("%d cycles in %v (%.0f/s), acquire p50 %v p99 %v max %v; %d hand-offs, p50 %v p99 %v max %v",
					len(took), elapsed.Round(time.Millisecond), float64(len(took))/elapsed.Seconds(),
					took[len(took)/2], took[len(took)*99/100], took[len(took)-1],
					len(handoffs), handoffs[len(handoffs)/2], handoffs[len(handoffs)*99/100], handoffs[len(handoffs)-1])
				if m := handoffs[len(handoffs)-1]; m > slowest {
					t.Errorf("slowest hand-off took %v, want at most %v", m, slowest)
				}
			})
		}
	}
}

// A release wakes the waiter Redis grants next even when its gateway
// holds an older waiter of the name: here "first" took its place in
// line before "second" (through another gateway, whose 503 it retries
// here keeping its place), but "second" joined this gateway's queue
// first. The release names "first", so "first" is handed the lock at
// once, not at its renewal tick (TicketRenew).
func TestAReleaseWakesTheFirstInLineNotTheOldestLocalWaiter(t *testing.T) {
	t.Parallel()
	forEachWaitRig(t, redislock.WaiterOptions{}, func(t *testing.T, r *waitRig) {
		ctx := t.Context()
		held := mustAcquire(t, r.l, "job", "holder", time.Minute)
		if res, err := r.l.TryAsWaiter(ctx, "job", "first", time.Minute); err != nil || res.Acquired {
			t.Fatalf("first's try: got %+v, %v", res, err)
		}
		type answer struct {
			owner string
			res   leasegate.AcquireResult
			err   error
			at    time.Time
		}
		got := make(chan answer, 2)
		wait := func(owner string) {
			res, err := r.w.Acquire(ctx, r.l.Locker, redislock.WaitRequest{Resource: "job", Owner: owner, TTL: time.Minute, Wait: 10 * time.Second})
			got <- answer{owner, res, err, time.Now()}
		}
		go wait("second")
		redistest.Eventually(t, 5*time.Second, "second queued", func() bool { return r.w.Queued(r.l.Locker, "job") == 1 })
		go wait("first")
		redistest.Eventually(t, 5*time.Second, "first queued", func() bool { return r.w.Queued(r.l.Locker, "job") == 2 })
		released := time.Now()
		if _, err := r.l.Release(ctx, "job", "holder", held.Token); err != nil {
			t.Fatal(err)
		}
		a := <-got
		if a.owner != "first" || a.err != nil || !a.res.Acquired {
			t.Fatalf("got %s: %+v, %v; want first granted", a.owner, a.res, a.err)
		}
		took := a.at.Sub(released)
		t.Logf("first granted %v after the release", took)
		if took > redislock.TicketRenew/2 {
			t.Errorf("first granted %v after the release, want well within the renewal tick %v", took, redislock.TicketRenew)
		}
		if _, err := r.l.Release(ctx, "job", "first", a.res.Lock.Token); err != nil {
			t.Fatal(err)
		}
		if a := <-got; a.owner != "second" || !a.res.Acquired {
			t.Fatalf("got %s: %+v, %v; want second granted", a.owner, a.res, a.err)
		}
	})
}
