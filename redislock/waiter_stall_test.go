package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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

// A waiting acquire answers when its wait is over, even when Redis hangs:
// each Redis call of the wait gets at most what is left of it, never the
// whole OpTimeout.
func TestAWaitEndsOnTimeWhenRedisStalls(t *testing.T) {
	const opTimeout = 5 * time.Second
	// Generous: the wait plus a loaded machine, well under opTimeout.
	const slack = 1500 * time.Millisecond

	t.Run("a wait whose first try hangs is unavailable at the end of the wait", func(t *testing.T) {
		r, srv := stalledRig(t)
		mustAcquire(t, r.l, "job", "a", time.Minute)
		pause(t, srv)
		const wait = 500 * time.Millisecond
		start := time.Now()
		res, err := r.w.Acquire(context.Background(), r.l, redislock.WaitRequest{
			Resource: "job", Owner: "b", TTL: time.Minute, Wait: wait, OpTimeout: opTimeout,
		})
		took := time.Since(start)
		t.Logf("answered after %v", took)
		if res.Acquired {
			t.Fatalf("got a grant from a stalled Redis: %+v", res)
		}
		if !errors.Is(err, redislock.ErrUnavailable) {
			t.Errorf("got %v, want ErrUnavailable (Redis never answered)", err)
		}
		if took > wait+slack {
			t.Errorf("answered after %v, want within the wait %v (+%v)", took, wait, slack)
		}
	})

	t.Run("a wait shorter than a round trip still gives its first try 100ms", func(t *testing.T) {
		// A busy Redis is slow, not gone: wait_ms 1 must not turn every
		// acquire into a 503. The stalled server shows how long the first
		// try was given.
		r, srv := stalledRig(t)
		pause(t, srv)
		start := time.Now()
		res, err := r.w.Acquire(context.Background(), r.l, redislock.WaitRequest{
			Resource: "job", Owner: "b", TTL: time.Minute, Wait: time.Millisecond, OpTimeout: opTimeout,
		})
		took := time.Since(start)
		t.Logf("answered after %v", took)
		if res.Acquired || !errors.Is(err, redislock.ErrUnavailable) {
			t.Errorf("got %+v, %v; want ErrUnavailable", res, err)
		}
		if took < 90*time.Millisecond || took > 100*time.Millisecond+slack {
			t.Errorf("answered after %v, want about 100ms", took)
		}
	})

	t.Run("a wait that had a contended answer is contended at the end of the wait", func(t *testing.T) {
		r, srv := stalledRig(t)
		// The holder's lease ends inside the wait: the head re-tries then,
		// and that try hangs.
		mustAcquire(t, r.l, "job", "a", 600*time.Millisecond)
		const wait = 1200 * time.Millisecond
		type answer struct {
			res redislock.AcquireResult
			err error
			at  time.Time
		}
		done := make(chan answer, 1)
		start := time.Now()
		go func() {
			res, err := r.w.Acquire(context.Background(), r.l, redislock.WaitRequest{
				Resource: "job", Owner: "b", TTL: time.Minute, Wait: wait, OpTimeout: opTimeout,
			})
			done <- answer{res, err, time.Now()}
		}()
		// The first try has answered "contended".
		eventually(t, 5*time.Second, "waiter queued", func() bool { return r.w.Queued(r.l, "job") == 1 })
		pause(t, srv)
		var a answer
		select {
		case a = <-done:
		case <-time.After(opTimeout + slack):
			t.Fatal("no answer")
		}
		took := a.at.Sub(start)
		t.Logf("answered after %v", took)
		if a.err != nil || a.res.Acquired {
			t.Errorf("got %+v, %v; want contended with no error", a.res, a.err)
		}
		if took > wait+slack {
			t.Errorf("answered after %v, want within the wait %v (+%v)", took, wait, slack)
		}
	})
}
