package redislock_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// holdTry is a go-redis hook that holds one script call of owner in
// flight, as a slow link or a busy Redis does: once armed, the next
// EVALSHA/EVAL naming owner signals entered and waits for let. Then it
// runs the call in Redis whatever the caller's context says by now (the
// command was already on the wire) and answers as go-redis does when the
// reply comes after the caller's deadline: with the context's error. With
// fail set it runs nothing and answers the context's error when the
// caller's context ends (a call that times out).
type holdTry struct {
	owner   string
	fail    bool
	armed   atomic.Bool
	entered chan struct{}
	let     chan struct{}
}

func newHoldTry(owner string, fail bool) *holdTry {
	return &holdTry{owner: owner, fail: fail, entered: make(chan struct{}), let: make(chan struct{})}
}

func (h *holdTry) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdTry) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *holdTry) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !h.names(cmd) || !h.armed.CompareAndSwap(true, false) {
			return next(ctx, cmd)
		}
		close(h.entered)
		if h.fail {
			<-ctx.Done()
			cmd.SetErr(ctx.Err())
			return ctx.Err()
		}
		<-h.let
		err := next(context.WithoutCancel(ctx), cmd)
		if ctx.Err() != nil {
			cmd.SetErr(ctx.Err())
			return ctx.Err()
		}
		return err
	}
}

// names reports whether cmd is a script call with h.owner among its
// arguments.
func (h *holdTry) names(cmd redis.Cmder) bool {
	if n := cmd.Name(); n != "evalsha" && n != "eval" {
		return false
	}
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && s == h.owner {
			return true
		}
	}
	return false
}

// TestATryInFlightWhenTheWaitEndsGivesTheAnswer: a waiting acquire whose
// try is in flight when wait_ms runs out lets that try finish (within
// OpTimeout) and answers what it did in Redis. Cutting it short would
// answer "not granted" while the try may still grant the lease
// (docs/safety.md, "A false alarm in the proxy scenario").
func TestATryInFlightWhenTheWaitEndsGivesTheAnswer(t *testing.T) {
	t.Parallel()
	// The wait must outlast the steps before the held try: the waiter
	// parks, the test sees it queued and releases, the try starts. With
	// 200 ms, `go test -p 4` on 2 cores ended the wait before the release
	// ("the release started no try") or before the test saw the waiter
	// queued.
	const wait = time.Second
	// past is how long after the wait's end the held try is let go: time
	// must pass here, as the wait's end is a timer in the gateway.
	const past = 200 * time.Millisecond
	type answer struct {
		res leasegate.AcquireResult
		err error
		at  time.Time
	}
	// run makes "waiter" wait on "job", held by "a", holds the try that
	// a's release wakes with h, calls during once that try is in flight
	// (with the time the wait ends by), and returns the answer and when
	// the wait began.
	run := func(t *testing.T, b *redistest.Backend, h *holdTry, opTimeout time.Duration, during func(r *waitRig, end time.Time)) (*waitRig, answer, time.Time) {
		t.Helper()
		b.RDB.AddHook(h)
		r := newWaitRig(t, b, b.Name, redislock.WaiterOptions{})
		holder := mustAcquire(t, r.l, "job", "a", time.Minute)
		done := make(chan answer, 1)
		start := time.Now()
		go func() {
			res, err := r.w.Acquire(context.Background(), r.l.Locker, redislock.WaitRequest{
				Resource: "job", Owner: h.owner, TTL: time.Minute, Wait: wait, OpTimeout: opTimeout,
			})
			done <- answer{res, err, time.Now()}
		}()
		// The first try has answered "contended" and the waiter is parked.
		redistest.Eventually(t, 5*time.Second, "waiter queued", func() bool { return r.w.Queued(r.l.Locker, "job") == 1 })
		h.armed.Store(true)
		if rr, err := r.l.Release(context.Background(), "job", "a", holder.Token); err != nil || rr != leasegate.Released {
			t.Fatalf("release: %v, %v", rr, err)
		}
		select {
		case <-h.entered:
		case <-time.After(5 * time.Second):
			t.Fatal("the release started no try")
		}
		if during != nil {
			during(r, start.Add(wait))
		}
		select {
		case a := <-done:
			t.Logf("answered after %v", a.at.Sub(start))
			return r, a, start
		case <-time.After(opTimeout + 5*time.Second):
			t.Fatal("no answer")
		}
		return nil, answer{}, start
	}
	// letGoAfter lets h's try go once end has passed.
	letGoAfter := func(h *holdTry, end time.Time) {
		<-time.After(time.Until(end.Add(past)))
		close(h.let)
	}

	redistest.EachBackend(t, func(t *testing.T, b *redistest.Backend) {
		if b.Mini != nil {
			b.RealClock()
		}
		t.Run("a try that grants after the wait ran out answers granted", func(t *testing.T) {
			h := newHoldTry("waiter", false)
			r, a, start := run(t, b, h, 5*time.Second, func(_ *waitRig, end time.Time) { letGoAfter(h, end) })
			if a.err != nil || !a.res.Acquired {
				t.Fatalf("got %+v, %v; want granted (the try granted the lease in Redis)", a.res, a.err)
			}
			if !a.res.Waited {
				t.Errorf("got Waited false, want true")
			}
			if took := a.at.Sub(start); took < wait+past {
				t.Errorf("answered after %v, want no sooner than the held try (%v)", took, wait+past)
			}
			lk, err := r.l.Status(context.Background(), "job")
			if err != nil || lk.Owner != "waiter" || lk.Token != a.res.Lock.Token {
				t.Errorf("Status: got %+v, %v; want held by waiter with token %d", lk, err, a.res.Lock.Token)
			}
		})
		t.Run("a try that finds another holder after the wait ran out answers contended with that holder", func(t *testing.T) {
			h := newHoldTry("waiter", false)
			r, a, _ := run(t, b, h, 5*time.Second, func(r *waitRig, end time.Time) {
				// c takes the lock while the waiter's try is in flight
				// (the waiter's place in line taken away first).
				if err := r.l.Leave(context.Background(), "job", "waiter"); err != nil {
					t.Fatal(err)
				}
				mustAcquire(t, r.l, "job", "c", time.Minute)
				letGoAfter(h, end)
			})
			if a.err != nil || a.res.Acquired {
				t.Fatalf("got %+v, %v; want contended", a.res, a.err)
			}
			if a.res.Lock.Owner != "c" || a.res.RetryAfter <= 0 {
				t.Errorf("got holder %q, retry after %v; want c's lease as the try read it", a.res.Lock.Owner, a.res.RetryAfter)
			}
			if lk, err := r.l.Status(context.Background(), "job"); err != nil || lk.Owner != "c" {
				t.Errorf("Status: got %+v, %v; want held by c", lk, err)
			}
		})
		t.Run("a try that times out after the wait ran out answers unavailable", func(t *testing.T) {
			// Longer than the whole wait, so the try is still in flight
			// when the wait ends.
			const opTimeout = wait + 400*time.Millisecond
			h := newHoldTry("waiter", true)
			_, a, start := run(t, b, h, opTimeout, nil)
			if a.res.Acquired || !errors.Is(a.err, leasegate.ErrUnavailable) {
				t.Fatalf("got %+v, %v; want ErrUnavailable (the try's outcome is unknown)", a.res, a.err)
			}
			var ne net.Error
			if !errors.Is(a.err, context.DeadlineExceeded) && !errors.As(a.err, &ne) {
				t.Errorf("got %v, want the try's own timeout", a.err)
			}
			if took := a.at.Sub(start); took < opTimeout {
				t.Errorf("answered after %v, want no sooner than the try's timeout %v", took, opTimeout)
			}
		})
	})
}

// TestWaitForLetsATryInFlightFinish: the semaphores' wait (WaitFor) gives
// each try the whole OpTimeout too, so a try in flight when the wait ends
// is not cut short and its success is the answer.
func TestWaitForLetsATryInFlightFinish(t *testing.T) {
	t.Parallel()
	w := redislock.NewWaiter(nil, redislock.WaiterOptions{})
	t.Cleanup(w.Close)
	const wait = 100 * time.Millisecond
	entered, let := make(chan struct{}), make(chan struct{})
	type answer struct {
		done, waited bool
		err          error
	}
	answers := make(chan answer, 1)
	start := time.Now()
	tries := 0
	go func() {
		done, waited, err := w.WaitFor(context.Background(), redislock.WaitOptions{Key: "k", Wait: wait, OpTimeout: 5 * time.Second},
			func(ctx context.Context, _ time.Duration) (bool, time.Duration, error) {
				tries++
				if tries == 1 {
					return false, time.Millisecond, nil // taken; free again soon
				}
				close(entered)
				<-let
				return ctx.Err() == nil, 0, ctx.Err()
			})
		answers <- answer{done, waited, err}
	}()
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("no second try")
	}
	<-time.After(time.Until(start.Add(wait + 100*time.Millisecond)))
	close(let)
	select {
	case a := <-answers:
		if !a.done || !a.waited || a.err != nil {
			t.Errorf("got done %v, waited %v, %v; want done after waiting", a.done, a.waited, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
	if tries != 2 {
		t.Errorf("got %d tries, want 2", tries)
	}
}
