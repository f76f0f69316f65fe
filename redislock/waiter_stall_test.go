package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// stalledRig is a wait rig on a real redis-server that the test can
// freeze (SIGSTOP), with a client that honours context deadlines as the
// gateway's does (server.NewRedisClient).
func stalledRig(t *testing.T) (*waitRig, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	r := newWaitRig(t, &redistest.Backend{Name: "on redis-server", RDB: rdb, Server: srv}, "redis-server", redislock.WaiterOptions{})
	return r, srv
}

// pause freezes srv until the end of the test.
func pause(t *testing.T, srv *redistest.Server) {
	t.Helper()
	srv.Pause()
	t.Cleanup(srv.Resume)
}

// A waiting acquire is answered truly when Redis hangs: a try in flight
// is not cut short by the end of the wait (it could still grant the
// lease), so it answers unavailable at its own timeout (OpTimeout), at
// most one call after the wait; a wait parked between tries when Redis
// hangs is contended at the end of the wait, with no call in flight.
func TestAWaitIsAnsweredTrulyWhenRedisStalls(t *testing.T) {
	t.Parallel()
	const opTimeout = time.Second
	// Generous, for a loaded machine.
	const slack = 1500 * time.Millisecond

	for _, wait := range []time.Duration{time.Millisecond, 300 * time.Millisecond} {
		t.Run(fmt.Sprintf("a wait of %v whose first try hangs is unavailable at the try's timeout", wait), func(t *testing.T) {
			r, srv := stalledRig(t)
			mustAcquire(t, r.l, "job", "a", time.Minute)
			pause(t, srv)
			start := time.Now()
			res, err := r.w.Acquire(context.Background(), r.l.Locker, redislock.WaitRequest{
				Resource: "job", Owner: "b", TTL: time.Minute, Wait: wait, OpTimeout: opTimeout,
			})
			took := time.Since(start)
			t.Logf("answered after %v", took)
			if res.Acquired {
				t.Fatalf("got a grant from a stalled Redis: %+v", res)
			}
			if !errors.Is(err, leasegate.ErrUnavailable) {
				t.Errorf("got %v, want ErrUnavailable (the try's outcome is unknown)", err)
			}
			if took < opTimeout || took > opTimeout+slack {
				t.Errorf("answered after %v, want at the try's timeout %v (+%v)", took, opTimeout, slack)
			}
		})
	}

	type answer struct {
		res leasegate.AcquireResult
		err error
		at  time.Time
	}
	// waitThenPause makes b wait (wait) on "job", held by a for ttl, and
	// freezes Redis once b's first try has answered contended.
	waitThenPause := func(t *testing.T, ttl, wait time.Duration) (answer, time.Time) {
		t.Helper()
		r, srv := stalledRig(t)
		mustAcquire(t, r.l, "job", "a", ttl)
		done := make(chan answer, 1)
		start := time.Now()
		go func() {
			res, err := r.w.Acquire(context.Background(), r.l.Locker, redislock.WaitRequest{
				Resource: "job", Owner: "b", TTL: time.Minute, Wait: wait, OpTimeout: opTimeout,
			})
			done <- answer{res, err, time.Now()}
		}()
		redistest.Eventually(t, 5*time.Second, "waiter queued", func() bool { return r.w.Queued(r.l.Locker, "job") == 1 })
		pause(t, srv)
		select {
		case a := <-done:
			t.Logf("answered after %v", a.at.Sub(start))
			return a, start
		case <-time.After(wait + opTimeout + slack):
			t.Fatal("no answer")
		}
		return answer{}, start
	}

	t.Run("a wait whose re-try hangs is unavailable at the try's timeout", func(t *testing.T) {
		// The holder's lease ends inside the wait: the head re-tries then,
		// and that try hangs past the end of the wait.
		const wait = 1200 * time.Millisecond
		a, start := waitThenPause(t, 600*time.Millisecond, wait)
		if a.res.Acquired || !errors.Is(a.err, leasegate.ErrUnavailable) {
			t.Errorf("got %+v, %v; want ErrUnavailable", a.res, a.err)
		}
		if took := a.at.Sub(start); took < 600*time.Millisecond+opTimeout || took > wait+opTimeout+slack {
			t.Errorf("answered after %v, want at the re-try's timeout (%v .. %v)", took, 600*time.Millisecond+opTimeout, wait+opTimeout+slack)
		}
	})

	t.Run("a wait parked while Redis hangs is contended at the end of the wait", func(t *testing.T) {
		const wait = 500 * time.Millisecond
		a, start := waitThenPause(t, time.Minute, wait)
		if a.err != nil || a.res.Acquired || a.res.Lock.Owner != "a" {
			t.Errorf("got %+v, %v; want contended on a's lease", a.res, a.err)
		}
		if took := a.at.Sub(start); took < wait || took > wait+slack {
			t.Errorf("answered after %v, want at the end of the wait %v (+%v)", took, wait, slack)
		}
	})
}
